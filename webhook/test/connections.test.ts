// The connection cap of the admission server: at the cap the oldest connection that carries no
// request makes room, one whose request is being answered is never cut off, and with every
// connection busy the new one is refused.

import type { Server as HttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect, type TLSSocket } from 'node:tls';
import { makeServingCert } from '@outrigger/testkit';
import { boundPort, startHttps } from '../src/server';
import { waitFor } from './support';

const cert = makeServingCert();

describe('the connection cap', () => {
  let server: HttpsServer;
  let port: number;
  /** Responses held open by the handler until the test ends them. */
  const held: ServerResponse[] = [];
  let evicted = 0;
  const sockets: TLSSocket[] = [];

  beforeAll(async () => {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/hold') held.push(res);
        else res.end('done\n');
      });
    };
    server = await startHttps(
      handler,
      { cert: cert.certPem, key: cert.keyPem },
      { host: '127.0.0.1', port: 0 },
      { maxConnections: 2, onEvicted: () => evicted++ },
    );
    port = boundPort(server);
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    for (const res of held) res.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A connection with its closing recorded; `path` posted on it, answered or held. */
  async function connection(path?: string): Promise<{ socket: TLSSocket; closed: Promise<void> }> {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const s = connect(
        { host: '127.0.0.1', port, ca: [cert.caPem], servername: 'localhost' },
        () => resolve(s),
      );
      s.on('error', reject);
    });
    sockets.push(socket);
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    if (path) {
      const answered = path === '/hold' ? undefined : new Promise((r) => socket.once('data', r));
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`);
      await (answered ?? waitFor(() => held.length > 0));
    }
    return { socket, closed };
  }

  it('closes the idle connection, not the one whose request is in flight', async () => {
    const busy = await connection('/hold');
    const idle = await connection('/answer');
    const third = await connection('/answer');
    await idle.closed;
    expect(busy.socket.destroyed).toBe(false);
    expect(third.socket.destroyed).toBe(false);
    expect(evicted).toBe(1);
    // Now both carry a request: the next connection is the one refused.
    third.socket.write(`POST /hold HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`);
    await waitFor(() => held.length === 2);
    const fourth = await connection();
    await fourth.closed;
    expect(busy.socket.destroyed).toBe(false);
    expect(third.socket.destroyed).toBe(false);
    expect(evicted).toBe(2);
    // Once its answer is written, a connection is idle again and makes room.
    held[0]?.end('late\n');
    await new Promise((r) => busy.socket.once('data', r));
    const fifth = await connection('/answer');
    await busy.closed;
    expect(fifth.socket.destroyed).toBe(false);
    expect(third.socket.destroyed).toBe(false);
  });
});
