// The handler of the admission endpoints: reads the body under its byte budgets (body.ts), has
// it answered (answer.ts) here or, when it is large, on the worker (large-bodies.ts), and turns
// the answer into the response, metrics and logs. No error of one request reaches another or
// the process.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { AdmissionState, Endpoint } from './admit';
import { answerBody, type Answer } from './answer';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import {
  BodyTooLargeError,
  BodyTooSlowError,
  SMALL_BODY_BYTES,
  freeNow,
  readBody,
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

type ServeDeps = HandlerDeps & { malformedLog: Throttled };

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
  const deps: ServeDeps = { ...handlerDeps, malformedLog: new Throttled() };
  return (req, res) => {
    const endpoint = ROUTES[pathOf(req.url ?? '')];
    if (!endpoint)
      return send(res, 404, 'not found: POST to /mutate/pods or /mutate/workloads\n', 'text/plain');
    if (req.method !== 'POST')
      return send(res, 405, 'method not allowed: POST an AdmissionReview\n', 'text/plain');
    void handle(endpoint, req, res, deps);
  };
}

function pathOf(url: string): string {
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
}

async function handle(
  endpoint: Endpoint,
  req: IncomingMessage,
  res: ServerResponse,
  deps: ServeDeps,
): Promise<void> {
  const inFlight = deps.metrics.inFlightOf(endpoint);
  inFlight.inc();
  try {
    await serve(endpoint, req, res, deps);
  } catch (err) {
    failed(endpoint, res, deps, err);
  } finally {
    inFlight.dec();
  }
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
    const refused = err instanceof BodyTooLargeError || err instanceof BodyTooSlowError;
    deps.metrics.admissions.inc({ endpoint, outcome: 'invalid', reason: readFailure(err) });
    // The rest of the body is not read: closing the connection after the answer stops it.
    if (refused) {
      res.setHeader('connection', 'close');
      send(res, err instanceof BodyTooLargeError ? 413 : 408, `${err.message}\n`, 'text/plain');
    } else req.destroy();
    return;
  }
  try {
    await admit(endpoint, body.bytes, res, deps);
  } finally {
    body.release();
    freeNow(body.bytes);
  }
}

function readFailure(err: unknown): 'body-too-large' | 'body-too-slow' | 'read-error' {
  if (err instanceof BodyTooLargeError) return 'body-too-large';
  return err instanceof BodyTooSlowError ? 'body-too-slow' : 'read-error';
}

/** Answers a body here, or on the worker when it is large. */
function answerOnce(
  endpoint: Endpoint,
  bytes: Buffer,
  refreshed: boolean,
  deps: ServeDeps,
): Promise<{ answer: Answer; body?: Uint8Array }> {
  if (deps.largeBodies && bytes.length > SMALL_BODY_BYTES)
    return deps.largeBodies.answer(endpoint, bytes, refreshed);
  const context = { state: deps.state, onError: deps.onError, hasSeen: deps.hasSeen, refreshed };
  return Promise.resolve({ answer: answerBody(endpoint, bytes.toString('utf8'), context) });
}

async function admit(
  endpoint: Endpoint,
  bytes: Buffer,
  res: ServerResponse,
  deps: ServeDeps,
): Promise<void> {
  const start = performance.now();
  const first = await answerOnce(endpoint, bytes, false, deps);
  let answer = first.answer;
  if (answer.kind === 'needs-revision') {
    // The pod's template names a revision not seen here: fetch the configuration, then answer
    // with whatever is in force by then. The body is the worker's to give back, if it had it.
    await deps.ensureRevision(answer.revision);
    const back = first.body;
    const again = back ? Buffer.from(back.buffer, back.byteOffset, back.byteLength) : bytes;
    answer = (await answerOnce(endpoint, again, true, deps)).answer;
  }
  if (res.destroyed) return;
  respond({ endpoint, answer, res, start }, deps);
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
