// The handler of the admission endpoints: reads the body under its byte budgets (body.ts), has
// it answered (answer.ts) here or, when it is large, on the worker (large-bodies.ts), and turns
// the answer into the response, metrics and logs. No error of one request reaches another or
// the process.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AdmissionState, Endpoint } from './admit';
import { answerBody, type Answer, type AnswerContext } from './answer';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import {
  BodyTooLargeError,
  BodyTooSlowError,
  SMALL_BODY_BYTES,
  freeNow,
  readBody,
  readSmallBody,
  smallBody,
  type Body,
  type BodyBudget,
} from './body';
import type { LargeBodyWorker } from './large-bodies';
import { Throttled } from './throttled';

export interface HandlerDeps {
  /** The state in force; undefined until configuration (and namespaces, with an API) are loaded. */
  state: () => AdmissionState | undefined;
  /** Whether a configuration revision was ever in force here. */
  hasSeen: (revision: string) => boolean;
  /** Fetches the configuration once more, hoping for `revision` (rate-limited, bounded). */
  ensureRevision: (revision: string) => Promise<void>;
  metrics: WebhookMetrics;
  logger: Logger;
  onError: 'allow' | 'deny';
  maxBodyBytes: number;
  /** Shared by every request in flight; see body.ts. */
  bodyBudget: BodyBudget;
  /** Answers bodies over SMALL_BODY_BYTES off the main thread; without it, all are answered here. */
  largeBodies?: LargeBodyWorker;
}

type ServeDeps = HandlerDeps & {
  malformedLog: Throttled;
  /** What answerBody is given: first, and after a refresh of the configuration. */
  contexts: { first: AnswerContext; afterFetch: AnswerContext };
};

const ROUTES: Record<string, Endpoint> = {
  '/mutate/pods': 'pods',
  '/mutate/workloads': 'workloads',
};

function send(res: ServerResponse, status: number, body: string, type = 'application/json'): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

export function createAdmissionHandler(
  handlerDeps: HandlerDeps,
): (req: IncomingMessage, res: ServerResponse) => void {
  const { state, onError, hasSeen } = handlerDeps;
  const deps: ServeDeps = {
    ...handlerDeps,
    malformedLog: new Throttled(),
    contexts: {
      first: { state, onError, hasSeen, afterFetch: false },
      afterFetch: { state, onError, hasSeen, afterFetch: true },
    },
  };
  return (req, res) => {
    const endpoint = ROUTES[pathOf(req.url ?? '')];
    if (!endpoint)
      return send(res, 404, 'not found: POST to /mutate/pods or /mutate/workloads\n', 'text/plain');
    if (req.method !== 'POST')
      return send(res, 405, 'method not allowed: POST an AdmissionReview\n', 'text/plain');
    handle(endpoint, req, res, deps);
  };
}

function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

/**
 * Answers one admission request. A small body (every real review) is answered as soon as its
 * last byte has arrived, in that turn of the event loop, without a promise in between: beside
 * parsing, a request's plumbing is a good part of what it costs (docs/benchmarks.md, Webhook,
 * "What an admission's parts cost", row "small bodies without promises"). Any other body, and
 * a small one whose pod asks for a revision not seen here yet, goes through promises (admit,
 * answerAfterFetch).
 */
function handle(
  endpoint: Endpoint,
  req: IncomingMessage,
  res: ServerResponse,
  deps: ServeDeps,
): void {
  const inFlight = deps.metrics.inFlightOf(endpoint);
  inFlight.inc();
  const small = smallBody(req, deps.maxBodyBytes);
  if (small === undefined) {
    void serve(endpoint, req, res, deps)
      .catch((err: unknown) => failed(endpoint, res, deps, err))
      .finally(() => inFlight.dec());
    return;
  }
  readSmallBody(req, small, (bytes, failure) => {
    const finish = (): void => {
      inFlight.dec();
      if (bytes) freeNow(bytes);
    };
    let waiting: Promise<void> | undefined;
    try {
      if (bytes) waiting = admitSmall(endpoint, bytes, res, deps);
      else unread(failure, { endpoint, req, res }, deps);
    } catch (err) {
      failed(endpoint, res, deps, err);
    }
    if (!waiting) return finish();
    void waiting.catch((err: unknown) => failed(endpoint, res, deps, err)).finally(finish);
  });
}

/** A failure no request should cause: counted, logged, answered 500; the process goes on. */
function failed(endpoint: Endpoint, res: ServerResponse, deps: ServeDeps, err: unknown): void {
  try {
    deps.metrics.internalErrors.inc({ endpoint });
    deps.logger.error('request failed', { endpoint, error: messageOf(err) });
    send(res, 500, 'internal error: see the webhook log\n', 'text/plain');
  } catch {
    res.destroy();
  }
}

const messageOf = (err: unknown): string =>
  err instanceof Error ? `${err.name}: ${err.message.slice(0, 500)}` : 'unknown error';

/** A body that is not small: read under the shared budget, answered here or on the worker. */
async function serve(
  endpoint: Endpoint,
  req: IncomingMessage,
  res: ServerResponse,
  deps: ServeDeps,
): Promise<void> {
  let body: Body;
  try {
    body = await readBody(req, deps.maxBodyBytes, deps.bodyBudget);
  } catch (err) {
    unread(err, { endpoint, req, res }, deps);
    return;
  }
  try {
    await admit(endpoint, body.bytes, res, deps);
  } finally {
    body.release();
    freeNow(body.bytes);
  }
}

/** A body that could not be read: counted, and answered 413 or 408, or its connection closed. */
function unread(
  err: unknown,
  request: { endpoint: Endpoint; req: IncomingMessage; res: ServerResponse },
  deps: ServeDeps,
): void {
  const { endpoint, req, res } = request;
  const refused = err instanceof BodyTooLargeError || err instanceof BodyTooSlowError;
  deps.metrics.admissions.inc({ endpoint, outcome: 'invalid', reason: readFailure(err) });
  // The rest of the body is not read: closing the connection after the answer stops it.
  if (refused) {
    res.setHeader('connection', 'close');
    send(res, err instanceof BodyTooLargeError ? 413 : 408, `${err.message}\n`, 'text/plain');
  } else req.destroy();
}

function readFailure(err: unknown): 'body-too-large' | 'body-too-slow' | 'read-error' {
  if (err instanceof BodyTooLargeError) return 'body-too-large';
  return err instanceof BodyTooSlowError ? 'body-too-slow' : 'read-error';
}

/** Answers a body here, or on the worker when it is large. */
function answerOnce(
  endpoint: Endpoint,
  bytes: Buffer,
  afterFetch: boolean,
  deps: ServeDeps,
): Promise<{ answer: Answer; body?: Uint8Array }> {
  if (deps.largeBodies && bytes.length > SMALL_BODY_BYTES)
    return deps.largeBodies.answer(endpoint, bytes, afterFetch);
  return Promise.resolve({ answer: answerHere(endpoint, bytes, afterFetch, deps) });
}

function answerHere(
  endpoint: Endpoint,
  bytes: Buffer,
  afterFetch: boolean,
  deps: ServeDeps,
): Answer {
  const context = afterFetch ? deps.contexts.afterFetch : deps.contexts.first;
  return answerBody(endpoint, bytes.toString('utf8'), context);
}

/** Answers a small body at once; a promise only when a revision must be fetched first. */
function admitSmall(
  endpoint: Endpoint,
  bytes: Buffer,
  res: ServerResponse,
  deps: ServeDeps,
): Promise<void> | undefined {
  const start = performance.now();
  const answer = answerHere(endpoint, bytes, false, deps);
  if (answer.kind === 'needs-revision')
    return answerAfterFetch({ endpoint, revision: answer.revision, bytes, res, start }, deps);
  if (!res.destroyed) respond({ endpoint, answer, res, start }, deps);
  return undefined;
}

async function admit(
  endpoint: Endpoint,
  bytes: Buffer,
  res: ServerResponse,
  deps: ServeDeps,
): Promise<void> {
  const start = performance.now();
  const first = await answerOnce(endpoint, bytes, false, deps);
  const { answer } = first;
  if (answer.kind === 'needs-revision') {
    // The body is the worker's to give back, if it had it.
    const back = first.body;
    const again = back ? Buffer.from(back.buffer, back.byteOffset, back.byteLength) : bytes;
    return answerAfterFetch(
      { endpoint, revision: answer.revision, bytes: again, res, start },
      deps,
    );
  }
  if (!res.destroyed) respond({ endpoint, answer, res, start }, deps);
}

/**
 * The pod's template names a revision not seen here: fetch the configuration, then answer with
 * whatever is in force by then.
 */
async function answerAfterFetch(
  request: {
    endpoint: Endpoint;
    revision: string;
    bytes: Buffer;
    res: ServerResponse;
    start: number;
  },
  deps: ServeDeps,
): Promise<void> {
  const { endpoint, revision, bytes, res, start } = request;
  await deps.ensureRevision(revision);
  const { answer } = await answerOnce(endpoint, bytes, true, deps);
  if (!res.destroyed) respond({ endpoint, answer, res, start }, deps);
}

function respond(
  options: { endpoint: Endpoint; answer: Answer; res: ServerResponse; start: number },
  deps: ServeDeps,
): void {
  const { endpoint, answer, res, start } = options;
  switch (answer.kind) {
    case 'malformed':
      deps.metrics.admissions.inc({ endpoint, outcome: 'invalid', reason: 'malformed' });
      deps.malformedLog.run((suppressed) =>
        deps.logger.warn('malformed admission review', {
          endpoint,
          error: answer.message,
          ...(suppressed > 0 ? { alsoMalformedSinceLastLine: suppressed } : {}),
        }),
      );
      return send(res, 400, `malformed AdmissionReview: ${answer.message}\n`, 'text/plain');
    case 'needs-revision':
      throw new Error(`revision ${answer.revision} asked for again after a refresh`);
    case 'failed':
      deps.metrics.internalErrors.inc({ endpoint });
      deps.logger.error('admission failed', {
        uid: answer.request.uid,
        endpoint,
        error: answer.message,
        stack: answer.stack,
        onError: deps.onError,
      });
      deps.metrics.observe(
        { endpoint, outcome: 'unchanged', reason: 'not-handled' },
        seconds(start),
      );
      return send(res, 200, answer.body);
    case 'admitted':
      send(res, 200, answer.body);
      return admitted(endpoint, answer, deps, start);
  }
}

const seconds = (start: number): number => (performance.now() - start) / 1000;

function admitted(
  endpoint: Endpoint,
  answer: Extract<Answer, { kind: 'admitted' }>,
  deps: ServeDeps,
  start: number,
): void {
  const { outcome, reason } = answer.admission.result;
  deps.metrics.observe({ endpoint, outcome, reason }, seconds(start));
  if (answer.admission.sets) deps.metrics.countSets(answer.admission.sets);
  const revision = answer.admission.revision;
  if (revision && revision.rule !== 'current') {
    deps.metrics.pinnedAdmissions.inc({ rule: revision.rule });
    if (revision.rule === 'fallback')
      deps.logger.warn('pinned revision no longer in the history; injected the current one', {
        uid: answer.request.uid,
        namespace: answer.request.namespace,
        owner: answer.admission.owner,
        requested: revision.requested,
        revision: revision.revision,
      });
  }
  // Checked first: the fields would be built for nothing on every admission.
  if (deps.logger.isDebugEnabled()) {
    deps.logger.debug('admission', {
      uid: answer.request.uid,
      endpoint,
      outcome,
      reason,
      namespace: answer.request.namespace,
      owner: answer.admission.owner,
      dryRun: answer.request.dryRun,
    });
  }
}
