// The admission server's open connections: which carry a request now, whose request is still
// arriving, which never sent a byte, and how many there may be. Each costs a file descriptor and
// some 70 KiB of TLS and HTTP state, so an unbounded number of idle ones is a way to take the
// process over its memory limit.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { TLSSocket } from 'node:tls';
import { clientOf } from './client-address';

/**
 * The default cap: far above the API server's pool of connections to a webhook, and low enough
 * that that many idle connections (about 75 MiB) fit beside the worst body traffic.
 */
export const MAX_CONNECTIONS = 1000;

export class Connections {
  /** In the order they opened, each with its client (client-address.ts). */
  private readonly open = new Map<TLSSocket, string>();
  /**
   * Each connection's latest response: the connection carries a request until that response is
   * written. Kept without a listener per request, which cost 3 % of an admission's CPU time
   * (docs/benchmarks.md, Webhook, "What an admission's parts cost", row "connections"); read
   * only at the cap.
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

  /** 0 for an idle connection, 1 for one whose request is still arriving; else it cannot go. */
  private roomRank(socket: TLSSocket): number | undefined {
    if (socket.destroyed) return undefined; // already closing: no room
    if (!this.carriesRequest(socket)) return 0;
    return this.stillArriving(socket) ? 1 : undefined;
  }

  /**
   * The connection closed at the cap to let `socket` in, or `socket` itself. It comes from the
   * client (client-address.ts) with the most connections that could go, idle or with a request
   * still arriving, the new one counted for its own: so a client that opens connections at the
   * cap cuts off its own, and clients spread over many addresses cannot get the API server's
   * new connection refused while any of theirs could go. From that client the oldest idle
   * connection, else the oldest whose request is still arriving; one whose request is being
   * answered is never cut off, and with none that could go the new one is refused. From one
   * address alone that is: the oldest idle, else the oldest still arriving, else the new one.
   */
  private makingRoom(socket: TLSSocket, client: string): TLSSocket {
    const candidates: { s: TLSSocket; client: string; rank: number }[] = [];
    const couldGo = new Map<string, number>([[client, 1]]);
    for (const [s, c] of this.open) {
      const rank = this.roomRank(s);
      if (rank === undefined) continue;
      candidates.push({ s, client: c, rank });
      couldGo.set(c, (couldGo.get(c) ?? 0) + 1);
    }
    // The most that could go, then idle before still arriving before the new one, then the oldest.
    let room = socket;
    let best = { many: couldGo.get(client) ?? 0, rank: 2 };
    for (const { s, client: c, rank } of candidates) {
      const many = couldGo.get(c) ?? 0;
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
    for (const socket of this.open.keys()) if (socket.bytesRead === 0) socket.destroy();
  }

  private opened(socket: TLSSocket): void {
    const client = clientOf(socket.remoteAddress);
    if (this.open.size >= this.options.max) {
      const room = this.makingRoom(socket, client);
      room.destroy();
      this.options.onEvicted?.();
      if (room === socket) return;
      // Its 'close' comes later: counted until then, a burst of new ones would close more.
      this.open.delete(room);
    }
    this.open.set(socket, client);
    socket.once('close', () => {
      this.open.delete(socket);
      this.latest.delete(socket);
    });
  }
}
