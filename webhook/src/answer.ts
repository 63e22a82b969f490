// The answer to one request body, as a function of the body and the state in force: parse,
// check, admit, serialise. No I/O, so it runs the same on the main thread (small bodies) and in
// the large-body worker. The one thing it cannot do itself, fetching a configuration revision a
// pod asks for and the webhook has not seen, it hands back to the caller as `needs-revision`.

import {
  admitPod,
  admitWorkload,
  requestedRevision,
  type Admission,
  type AdmissionState,
  type Endpoint,
} from './admit';
import {
  BadReviewError,
  allow,
  deny,
  parseReview,
  reviewJson,
  type AdmissionRequest,
} from './review';

export interface AnswerContext {
  state: () => AdmissionState | undefined;
  onError: 'allow' | 'deny';
  /** Whether a revision was ever in force here; asked only when not `afterFetch`. */
  hasSeen: (revision: string) => boolean;
  /** The caller already tried to fetch the requested revision: answer with what is held. */
  afterFetch: boolean;
}

/** What the log and the metrics need of the request. */
export interface RequestSummary {
  uid: string;
  namespace?: string;
  dryRun?: boolean;
}

export type Answer =
  | { kind: 'malformed'; message: string }
  | { kind: 'needs-revision'; revision: string }
  | { kind: 'admitted'; request: RequestSummary; admission: Admission; body: string }
  /** An internal failure, already answered as --on-error says; counted and logged by the caller. */
  | { kind: 'failed'; request: RequestSummary; message: string; stack?: string; body: string };

const summary = (request: AdmissionRequest): RequestSummary => ({
  uid: request.uid,
  namespace: request.namespace,
  dryRun: request.dryRun,
});

export function answerBody(endpoint: Endpoint, body: string, ctx: AnswerContext): Answer {
  let request: AdmissionRequest;
  try {
    request = parseReview(body);
  } catch (err) {
    if (err instanceof BadReviewError) return { kind: 'malformed', message: err.message };
    throw err;
  }
  const revision = endpoint === 'pods' ? requestedRevision(request) : undefined;
  if (revision !== undefined && !ctx.afterFetch && !ctx.hasSeen(revision))
    return { kind: 'needs-revision', revision };
  try {
    const state = ctx.state();
    if (!state) throw new Error('the webhook has no valid configuration yet');
    const admission =
      endpoint === 'pods' ? admitPod(request, state, revision) : admitWorkload(request, state);
    return {
      kind: 'admitted',
      request: summary(request),
      admission,
      body: reviewJson(admission.response),
    };
  } catch (err) {
    return failed(request, err, ctx.onError);
  }
}

function failed(request: AdmissionRequest, err: unknown, onError: 'allow' | 'deny'): Answer {
  const message = `outrigger webhook failed: ${err instanceof Error ? err.message : String(err)}`;
  const response =
    onError === 'deny'
      ? deny(request.uid, 500, message)
      : // Admitted unchanged: the controller heals pods that escaped injection.
        allow(request.uid, [], [`${message}; admitted without the sidecar`]);
  return {
    kind: 'failed',
    request: summary(request),
    message,
    stack: err instanceof Error ? err.stack : undefined,
    body: reviewJson(response),
  };
}
