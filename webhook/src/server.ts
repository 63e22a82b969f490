// The HTTPS admission server and the plain-HTTP metrics server: timeouts tuned for the API
// server, the connection cap (connections.ts), the certificate. What a request gets is the
// admission handler's (admission-handler.ts).

import type { Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import { listenOn, startProbeServer, type Probes } from '@outrigger/kube/without-api';
import type { createAdmissionHandler } from './admission-handler';
export { boundPort } from '@outrigger/kube/without-api';
import type { Address } from './flags';
import type { WebhookMetrics } from './metrics';
import type { KeyPair } from './tls';
import { Connections, MAX_CONNECTIONS } from './connections';

/** Timeouts tuned for the API server, which keeps connections to webhooks alive and reuses them. */
export const SERVER_TIMEOUTS = {
  // From the end of the handshake for a connection's first request, so it also closes one that
  // sends nothing at all (with a 408, as Node does for any request whose headers are late).
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

/** The connections of each admission server, for closeUnusedConnections(). */
const connectionsOf = new WeakMap<HttpsServer, Connections>();

export function startHttps(
  handler: ReturnType<typeof createAdmissionHandler>,
  pair: KeyPair,
  address: Address,
  options: { maxConnections?: number; onEvicted?: () => void } = {},
): Promise<HttpsServer> {
  const connections = new Connections({
    max: options.maxConnections ?? MAX_CONNECTIONS,
    onEvicted: options.onEvicted,
  });
  const server = createHttpsServer(
    { cert: pair.cert, key: pair.key, minVersion: 'TLSv1.2', ...SERVER_TIMEOUTS },
    (req, res) => {
      if (connections.requested(req, res)) handler(req, res);
      else res.destroy();
    },
  );
  connections.watch(server);
  connectionsOf.set(server, connections);
  return listenOn(server, address);
}

/** Closes every connection that carries no request (see Connections.closeUnused). */
export function closeUnusedConnections(server: HttpsServer): void {
  connectionsOf.get(server)?.closeUnused(server);
}

export type { Probes } from '@outrigger/kube/without-api';

export function startMetricsServer(
  metrics: WebhookMetrics,
  probes: Probes,
  address: Address,
): Promise<HttpServer> {
  return startProbeServer(metrics.registry, probes, address);
}
