// The HTTPS admission server and the plain-HTTP metrics server. The handler reads the body
// under a limit, answers 400 for malformed reviews, dispatches to admit.ts, and turns any
// internal failure into the answer --on-error asks for.

import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { performance } from 'node:perf_hooks';
import type { TLSSocket } from 'node:tls';
import { listenOn, startProbeServer, type Probes } from '@outrigger/kube';
import {
  admitPod,
  admitWorkload,
  requestedRevision,
  type Admission,
  type AdmissionState,
  type Endpoint,
} from './admit';
export { boundPort } from '@outrigger/kube';
import type { Address } from './flags';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import { BodyTooLargeError, readBody, type Body, type BodyBudget } from './body';
import { BadReviewError, allow, deny, parseReview, wrap, type AdmissionRequest } from './review';
import type { KeyPair } from './tls';

export interface HandlerDeps {
  /** The state in force; undefined until configuration (and namespaces, with an API) are loaded. */
  state: () => AdmissionState | undefined;
  ensureRevision: (revision: string | undefined) => Promise<void>;
  metrics: WebhookMetrics;
  logger: Logger;
  onError: 'allow' | 'deny';
  maxBodyBytes: number;
  /** Shared by every request in flight; see body.ts. */
  bodyBudget: BodyBudget;
}

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
  deps: HandlerDeps,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const endpoint = ROUTES[(req.url ?? '').split('?')[0] ?? ''];
    if (!endpoint)
      return send(res, 404, 'not found: POST to /mutate/pods or /mutate/workloads\n', 'text/plain');
    if (req.method !== 'POST')
      return send(res, 405, 'method not allowed: POST an AdmissionReview\n', 'text/plain');
    deps.metrics.inFlight.inc({ endpoint });
    serve(endpoint, req, res, deps)
      .catch((err: unknown) => failed(endpoint, res, deps, err))
      .finally(() => deps.metrics.inFlight.dec({ endpoint }));
  };
}

/** A failure no request should cause: counted, logged, answered 500; the process goes on. */
function failed(endpoint: Endpoint, res: ServerResponse, deps: HandlerDeps, err: unknown): void {
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
  deps: HandlerDeps,
): Promise<void> {
  let body: Body;
  try {
    body = await readBody(req, deps.maxBodyBytes, deps.bodyBudget);
  } catch (err) {
    const tooLarge = err instanceof BodyTooLargeError;
    deps.metrics.admissions.inc({
      endpoint,
      outcome: 'invalid',
      reason: tooLarge ? 'body-too-large' : 'read-error',
    });
    // The rest of a large body is not read: closing the connection after the answer stops it.
    if (tooLarge) {
      res.setHeader('connection', 'close');
      send(res, 413, `${err.message}\n`, 'text/plain');
    } else req.destroy();
    return;
  }
  try {
    await admit(endpoint, body.text, res, deps);
  } finally {
    body.release();
  }
}

async function admit(
  endpoint: Endpoint,
  body: string,
  res: ServerResponse,
  deps: HandlerDeps,
): Promise<void> {
  const start = performance.now();
  let request: AdmissionRequest;
  try {
    request = parseReview(body);
  } catch (err) {
    if (!(err instanceof BadReviewError)) throw err;
    deps.metrics.admissions.inc({ endpoint, outcome: 'invalid', reason: 'malformed' });
    deps.logger.warn('malformed admission review', { endpoint, error: err.message });
    return send(res, 400, `malformed AdmissionReview: ${err.message}\n`, 'text/plain');
  }
  const admission = await answer(endpoint, request, deps);
  if (res.destroyed) return;
  send(res, 200, JSON.stringify(wrap(admission.response)));
  const { outcome, reason } = admission.result;
  deps.metrics.observe({ endpoint, outcome, reason }, (performance.now() - start) / 1000);
  // Checked first: winston builds the whole log entry before it filters by level.
  if (deps.logger.isDebugEnabled()) {
    deps.logger.debug('admission', {
      uid: request.uid,
      endpoint,
      outcome,
      reason,
      namespace: request.namespace,
      owner: admission.owner,
      dryRun: request.dryRun,
    });
  }
}

async function answer(
  endpoint: Endpoint,
  request: AdmissionRequest,
  deps: HandlerDeps,
): Promise<Admission> {
  try {
    if (endpoint === 'pods') await deps.ensureRevision(requestedRevision(request));
    const state = deps.state();
    if (!state) throw new Error('the webhook has no valid configuration yet');
    return endpoint === 'pods' ? admitPod(request, state) : admitWorkload(request, state);
  } catch (err) {
    const message = `outrigger webhook failed: ${(err as Error).message}`;
    deps.metrics.internalErrors.inc({ endpoint });
    deps.logger.error('admission failed', {
      uid: request.uid,
      endpoint,
      error: message,
      stack: (err as Error).stack,
      onError: deps.onError,
    });
    if (deps.onError === 'deny')
      return {
        response: deny(request.uid, 500, message),
        result: { outcome: 'unchanged', reason: 'not-handled' },
      };
    // Admitted unchanged: the controller heals pods that escaped injection.
    return {
      response: allow(request.uid, [], [`${message}; admitted without the sidecar`]),
      result: { outcome: 'unchanged', reason: 'not-handled' },
    };
  }
}

/** Timeouts tuned for the API server, which keeps connections to webhooks alive and reuses them. */
export const SERVER_TIMEOUTS = {
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  // Node checks the two timeouts above on this interval (30 s by default), so they fired up
  // to 30 s late: a slow client held its connection and its body's budget that much longer.
  connectionsCheckingInterval: 1000,
  // A client that opens a connection and never finishes the TLS handshake (default 120 s).
  handshakeTimeout: 10_000,
  // Longer than the client's idle timeout (90 s in Go's transport), so the server never
  // closes a connection the API server is about to reuse.
  keepAliveTimeout: 120_000,
};

/** The open TLS connections of each admission server, for closeUnusedConnections(). */
const openConnections = new WeakMap<HttpsServer, Set<TLSSocket>>();

export function startHttps(
  handler: ReturnType<typeof createAdmissionHandler>,
  pair: KeyPair,
  address: Address,
): Promise<HttpsServer> {
  const server = createHttpsServer(
    { cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2', ...SERVER_TIMEOUTS },
    handler,
  );
  const open = new Set<TLSSocket>();
  server.on('secureConnection', (socket: TLSSocket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  openConnections.set(server, open);
  return listenOn(server, address);
}

/**
 * Closes every connection that carries no request: the idle keep-alive ones, and those that
 * never carried one. The API server's HTTP client dials connections ahead of need and keeps the
 * spares; Node counts a connection active until its first request arrives (so headersTimeout can
 * reap silent clients), so closeIdleConnections() skips those, and server.close() would wait for
 * them until the drain deadline.
 */
export function closeUnusedConnections(server: HttpsServer): void {
  server.closeIdleConnections();
  // Nothing read yet means not even part of a request: closing loses nothing.
  for (const socket of openConnections.get(server) ?? [])
    if (socket.bytesRead === 0) socket.destroy();
}

export type { Probes } from '@outrigger/kube';

export function startMetricsServer(
  metrics: WebhookMetrics,
  probes: Probes,
  address: Address,
): Promise<HttpServer> {
  return startProbeServer(metrics.registry, probes, address);
}
