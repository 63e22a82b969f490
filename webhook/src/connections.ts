// The admission server's open connections: which carry a request now, whose request is still
// arriving, which never sent a byte, and how many there may be. Each costs a file descriptor and
// some 70 KiB of TLS and HTTP state, so an unbounded number of idle ones is a way to take the
// process over its memory limit.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';

/**
 * The default cap: far above the API server's pool of connections to a webhook, and low enough
 * that that many idle connections (about 75 MiB) fit beside the worst body traffic.
 */
export const MAX_CONNECTIONS = 1000;

export class Connections {
  /** In the order they opened: the first idle one is the oldest. */
  private readonly open = new Set<TLSSocket>();
  /**
   * Each connection's latest response: the connection carries a request until that response is
   * written. Kept without a listener per request, which cost 3 % of an admission's CPU time
   * (docs/benchmarks.md, "Connections"); read only at the cap.
   */
  private readonly latest = new Map<TLSSocket, ServerResponse>();

  constructor(private readonly options: { max: number; onEvicted?: () => void }) {}

  get size(): number {
    return this.open.size;
  }

  /**
   * Tracks a server's connections; call before it listens. The server's request handler must
   * call requested() first, and handle the request only if it says so (startHttps does).
   */
  watch(server: HttpsServer): void {
    server.on('secureConnection', (socket: TLSSocket) => this.opened(socket));
  }

  /**
   * Records the connection's latest request; false for a connection refused at the cap, whose
   * request must not be handled (a client that sends it with the end of the handshake gets it
   * parsed before the refusal: it was admitted and counted though no one could read the answer).
   */
  requested(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket as TLSSocket;
    if (!this.open.has(socket)) return false;
    this.latest.set(socket, res);
    return true;
  }

  private carriesRequest(socket: TLSSocket): boolean {
    const res = this.latest.get(socket);
    return res !== undefined && !res.writableFinished;
  }

  /**
   * Whether the connection's request is still arriving: its body is not all there. The API
   * server sends a review whole, so at the cap these are slow or stalled clients, and one of them
   * makes room before a new connection is refused: else clients that send part of a body and
   * stop would hold the cap for the whole request timeout and lock the API server out.
   */
  private stillArriving(socket: TLSSocket): boolean {
    return this.carriesRequest(socket) && this.latest.get(socket)?.req.complete === false;
  }

  /**
   * Closes every connection that carries no request: the idle keep-alive ones, and those that
   * never carried one (the API server dials spares ahead of need; Node counts a connection
   * active until its first request, so closeIdleConnections() alone would leave them open).
   */
  closeUnused(server: HttpsServer): void {
    server.closeIdleConnections();
    for (const socket of this.open) if (socket.bytesRead === 0) socket.destroy();
  }

  private opened(socket: TLSSocket): void {
    // At the cap, the oldest idle connection makes room, else the oldest whose request is still
    // arriving; with every connection answering a request, the new one is refused.
    if (this.open.size >= this.options.max) {
      const open = [...this.open];
      const room =
        open.find((s) => !this.carriesRequest(s)) ?? open.find((s) => this.stillArriving(s));
      (room ?? socket).destroy();
      this.options.onEvicted?.();
      if (!room) return;
    }
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.latest.delete(socket);
    });
  }
}
