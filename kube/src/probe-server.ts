// The plain-HTTP server both binaries run beside their work: /metrics (Prometheus text from a
// registry passed in), /healthz and /readyz. The registry is structural, so this package needs
// no metrics library; prom-client's Registry fits it.

import { createServer, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

export interface ListenAddress {
  /** Empty: every interface. */
  host: string;
  port: number;
}

export interface Probes {
  live: () => boolean;
  ready: () => boolean;
}

/** The slice of a prom-client Registry the server uses. */
export interface MetricsText {
  metrics(): Promise<string>;
  readonly contentType: string;
}

function send(res: ServerResponse, status: number, body: string, type: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function probe(res: ServerResponse, ok: boolean, words: [string, string], failStatus: number) {
  send(res, ok ? 200 : failStatus, ok ? `${words[0]}\n` : `${words[1]}\n`, 'text/plain');
}

export function startProbeServer(
  registry: MetricsText,
  probes: Probes,
  address: ListenAddress,
): Promise<HttpServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      registry.metrics().then(
        (text) => send(res, 200, text, registry.contentType),
        (err: unknown) => send(res, 500, `${(err as Error).message}\n`, 'text/plain'),
      );
      return;
    }
    if (path === '/healthz') return probe(res, probes.live(), ['ok', 'unhealthy'], 500);
    if (path === '/readyz') return probe(res, probes.ready(), ['ready', 'not ready'], 503);
    send(res, 404, 'not found: /metrics, /healthz, /readyz\n', 'text/plain');
  });
  return listenOn(server, address);
}

/** Listens on `address`; rejects when the port cannot be bound. */
export function listenOn<S extends HttpServer | HttpsServer>(
  server: S,
  address: ListenAddress,
): Promise<S> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host || undefined, () => {
      server.off('error', reject);
      resolve(server);
    });
  });
}

export function boundPort(server: HttpServer | HttpsServer): number {
  return (server.address() as AddressInfo).port;
}
