// A small admission webhook server for tests: HTTPS on 127.0.0.1 (by default), answering each
// AdmissionReview with what the test's function decides, and remembering every request.

import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { webhookHost } from './environment';
import type { ServingCert } from './tls';

/** The part of an admission.k8s.io/v1 AdmissionRequest tests look at. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  name?: string;
  namespace?: string;
  dryRun?: boolean;
  object?: unknown;
  oldObject?: unknown;
  userInfo?: { username?: string; groups?: string[] };
}

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/** What the test's function answers; `uid` and the AdmissionReview envelope are added. */
export interface AdmissionDecision {
  allowed: boolean;
  patch?: JsonPatchOperation[];
  /** Shown to the client when the request is denied. */
  message?: string;
  warnings?: string[];
}

export type Admit = (request: AdmissionRequest, path: string) => AdmissionDecision;

export interface AdmissionServerOptions {
  cert: ServingCert;
  admit: Admit;
  /** Default: webhookHost(), that is OUTRIGGER_E2E_WEBHOOK_HOST or 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
}

export interface ReceivedReview {
  path: string;
  request: AdmissionRequest;
}

export interface AdmissionServer {
  readonly port: number;
  /** https://<host>:<port><path>: a webhook's clientConfig.url. */
  url(path: string): string;
  /** Every AdmissionReview received so far, oldest first. */
  readonly received: ReceivedReview[];
  close(): Promise<void>;
}

const MAX_BODY_BYTES = 8 * 1024 * 1024;

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) request.destroy(new Error('request body too large'));
      else chunks.push(chunk);
    });
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

function reviewRequest(body: string): AdmissionRequest {
  const review = JSON.parse(body) as { kind?: unknown; request?: AdmissionRequest };
  if (review.kind !== 'AdmissionReview' || !review.request?.uid) {
    throw new Error('the body is not an AdmissionReview with a request');
  }
  return review.request;
}

function respond(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}

function answer(request: AdmissionRequest, decision: AdmissionDecision): unknown {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: {
      uid: request.uid,
      allowed: decision.allowed,
      ...(decision.patch && {
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(decision.patch)).toString('base64'),
      }),
      ...(decision.message !== undefined && { status: { message: decision.message } }),
      ...(decision.warnings && { warnings: decision.warnings }),
    },
  };
}

/** Starts the server; it is listening when this resolves. Close it in afterAll. */
export async function startAdmissionServer(
  options: AdmissionServerOptions,
): Promise<AdmissionServer> {
  const host = options.host ?? webhookHost();
  const received: ReceivedReview[] = [];
  const handle = async (incoming: IncomingMessage, response: ServerResponse): Promise<void> => {
    const path = new URL(incoming.url ?? '/', 'https://server').pathname;
    try {
      const request = reviewRequest(await readBody(incoming));
      received.push({ path, request });
      respond(response, 200, answer(request, options.admit(request, path)));
    } catch (error) {
      respond(response, 400, { message: error instanceof Error ? error.message : String(error) });
    }
  };
  const server: Server = createServer(
    { cert: options.cert.certPem, key: options.cert.keyPem },
    (incoming, response) => void handle(incoming, response),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    port,
    url: (path) => `https://${urlHost}:${port}${path.startsWith('/') ? path : `/${path}`}`,
    received,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
