// The connection cap of the admission server: at the cap the address with the most connections
// that could go makes room, with its oldest connection that carries no request, else its oldest
// whose body has not all arrived; one whose request is being answered is never cut off, and
// with none that could go the new one is refused.

import type { Server as HttpsServer } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect as netConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { makeServingCert, waitFor } from '@outrigger/testkit';
import { boundPort, startHttps } from '../src/server';

const cert = makeServingCert();

describe('the connection cap', () => {
  let server: HttpsServer;
  let port: number;
  /** Responses held open by the handler until the test ends them. */
  const held: ServerResponse[] = [];
  let evicted = 0;
  /** The path of every request the handler got. */
  const handled: string[] = [];
  const sockets: TLSSocket[] = [];

  beforeAll(async () => {
    const handler = (req: IncomingMessage, res: ServerResponse): void => {
      handled.push(req.url ?? '');
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

  /**
   * A connection with its closing recorded; `path` posted on it, answered or held; `from` its
   * loopback address (127.0.0.1 by default).
   */
  async function connection(
    path?: string,
    from = '127.0.0.1',
  ): Promise<{ socket: TLSSocket; closed: Promise<void> }> {
    const socket = await new Promise<TLSSocket>((resolve, reject) => {
      const tcp = netConnect({ host: '127.0.0.1', port, localAddress: from });
      const s = connect({ socket: tcp, ca: [cert.caPem], servername: 'localhost' }, () =>
        resolve(s),
      );
      s.on('error', reject);
    });
    sockets.push(socket);
    socket.on('error', () => undefined);
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    if (path) {
      const answered = path === '/hold' ? undefined : new Promise((r) => socket.once('data', r));
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`);
      await (answered ?? waitFor('the server to hold the request', () => held.length > 0));
    }
    return { socket, closed };
  }

  /** Resolves once the server has `n` connections open. */
  async function openConnections(n: number): Promise<void> {
    const count = (): Promise<number> =>
      new Promise((resolve) => server.getConnections((_, c) => resolve(c)));
    await waitFor(`the server to have ${n} connections open`, async () => (await count()) === n);
  }

  /** Closes every connection and answers every held request: the cap starts empty. */
  async function fresh(): Promise<void> {
    for (const s of sockets.splice(0)) s.destroy();
    for (const res of held.splice(0)) res.destroy();
    await openConnections(0);
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
    await waitFor('the server to hold both requests', () => held.length === 2);
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

  it('with none idle, closes the oldest connection whose body has not all arrived', async () => {
    await fresh();
    const before = evicted;
    // Two clients that send their headers and part of a small body, then nothing: before, they
    // held the cap until Node's request timeout (30 s), and every new connection was refused.
    const stalled = async (): Promise<{ socket: TLSSocket; closed: Promise<void> }> => {
      const c = await connection();
      c.socket.write(`POST /answer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":`);
      return c;
    };
    const first = await stalled();
    const second = await stalled();
    await openConnections(2);
    const client = await connection('/answer');
    await first.closed;
    expect(second.socket.destroyed).toBe(false);
    expect(client.socket.destroyed).toBe(false);
    expect(evicted).toBe(before + 1);
  });

  it('makes room from the address with the most connections that could go', async () => {
    await fresh();
    // The oldest idle connection is another address's: one client that opens connections
    // at the cap cuts off its own, not the API server's.
    const other = await connection('/answer', '127.0.0.1');
    const mine = await connection('/answer', '127.0.0.2');
    await connection('/answer', '127.0.0.2');
    await mine.closed;
    expect(other.socket.destroyed).toBe(false);
  });

  it("lets in a busy address's new connection: another's stalled one makes room", async () => {
    await fresh();
    // The API server dials when all its connections are busy: clients spread over other
    // addresses, each with fewer connections, must not get that new one refused.
    const busy = await connection('/hold', '127.0.0.1');
    const stalled = await connection(undefined, '127.0.0.2');
    stalled.socket.write(`POST /answer HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"a":`);
    await openConnections(2);
    const dialled = await connection('/answer', '127.0.0.1');
    await stalled.closed;
    expect(busy.socket.destroyed).toBe(false);
    expect(dialled.socket.destroyed).toBe(false);
  });

  it('does not handle a request that came with a connection it refused', async () => {
    await fresh();
    const [a, b] = [await connection('/hold'), await connection('/hold')];
    // Its request is sent with the end of the handshake, as a client that does not wait does.
    const refused = connect({ host: '127.0.0.1', port, ca: [cert.caPem], servername: 'localhost' });
    refused.on('error', () => undefined);
    refused.on('secureConnect', () =>
      refused.write(`POST /refused HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}`),
    );
    await new Promise((r) => refused.on('close', r));
    // Then a connection that is answered: whatever the server did with the refused one is done.
    held.splice(0).forEach((res) => res.end('late\n'));
    await Promise.all([a, b].map((c) => new Promise((r) => c.socket.once('data', r))));
    await connection('/answer');
    expect(handled).not.toContain('/refused');
  });
});
