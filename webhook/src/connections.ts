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
   * The connection closed at the cap to let `socket` in, or `socket` itself. It comes from the
   * address with the most connections, the new one counted: so a client that opens connections
   * at the cap cuts off its own, never those of an address with fewer (the API server's, say).
   * From that address the oldest idle connection, else the oldest whose request is still
   * arriving; one whose request is being answered is never cut off. When the new connection's
   * own address has the most and none of them can go, the new one is refused. From one address
   * alone that is: the oldest idle, else the oldest still arriving, else the new one.
   */
  private makingRoom(socket: TLSSocket): TLSSocket {
    const count = new Map<string | undefined, number>();
    for (const s of [...this.open, socket])
      count.set(s.remoteAddress, (count.get(s.remoteAddress) ?? 0) + 1);
    const weight = (s: TLSSocket): number => count.get(s.remoteAddress) ?? 0;
    // Idle before still arriving before the new one; then the most connections; then the oldest.
    let room = socket;
    let best = { many: weight(socket), rank: 2 };
    for (const s of this.open) {
      const rank = !this.carriesRequest(s) ? 0 : this.stillArriving(s) ? 1 : undefined;
      if (rank === undefined) continue;
      const many = weight(s);
      if (many > best.many || (many === best.many && rank < best.rank)) {
        room = s;
        best = { many, rank };
      }
    }
    return room;
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
    if (this.open.size >= this.options.max) {
      const room = this.makingRoom(socket);
      room.destroy();
      this.options.onEvicted?.();
      if (room === socket) return;
    }
    this.open.add(socket);
    socket.once('close', () => {
      this.open.delete(socket);
      this.latest.delete(socket);
    });
  }
}
