// Connection behaviours of a hostile client against the real HTTPS admission server, beside the
// fuzz suite's request bodies: what a client that opens connections and sends nothing can hold.

import type { Server } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { Agent } from 'node:https';
import { SERVER_TIMEOUTS, startHttps } from '../src/server';
import { largeRealisticCase, realisticCase } from '../bench/fuzz-cases';
import {
  judge,
  metricValue,
  post,
  rawConnection,
  startFuzzTarget,
  type RunningWebhook,
} from '../bench/fuzz-harness';
import { makeServingCert, waitFor } from '@outrigger/testkit';

jest.setTimeout(30_000);

let server: Server;
let port: number;

beforeAll(async () => {
  const made = makeServingCert();
  const pair = { cert: made.certPem, key: made.keyPem };
  server = await startHttps((_req, res) => res.end('ok'), pair, { host: '127.0.0.1', port: 0 });
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
});

afterAll(
  () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
);

const handshaken = (): Promise<TLSSocket> =>
  new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () =>
      resolve(socket),
    );
    socket.on('error', reject);
  });

/**
 * A connection whose handshake is done, what it was sent and how long after the handshake it
 * closed. It reads what it is sent: Node closes a silent connection with a 408, and a socket that
 * leaves those bytes unread never sees the close (a test that did not read hung in CI whenever
 * Node's check came before a timer of our own that closed them without a word).
 */
const silent = async (): Promise<{ closed: Promise<{ afterMs: number; sent: string }> }> => {
  const socket = await handshaken();
  const start = Date.now();
  let sent = '';
  socket.on('data', (b: Buffer) => (sent += b.toString()));
  return {
    closed: new Promise((resolve) =>
      socket.on('close', () => resolve({ afterMs: Date.now() - start, sent })),
    ),
  };
};

describe('a client that completes the TLS handshake and sends nothing', () => {
  it('is closed once the headers timeout has passed, not held for ever', async () => {
    // These held a file descriptor and memory until the client went away, so enough of them
    // would take the process down. Node's header timeout covers them from the connection on.
    const sockets = await Promise.all(Array.from({ length: 20 }, silent));
    // A connection that carried a request stays open for its keep-alive, as the API server's do.
    const used = await handshaken();
    used.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    const closes = await Promise.all(sockets.map((s) => s.closed));
    for (const { afterMs, sent } of closes) {
      expect(afterMs).toBeLessThan(SERVER_TIMEOUTS.headersTimeout + 3000);
      expect(sent).toMatch(/^(HTTP\/1\.1 408 |$)/);
    }
    expect(used.destroyed).toBe(false);
    used.destroy();
  });
});

describe('clients that hold the body budget or the connections', () => {
  let target: RunningWebhook;
  let agent: Agent;

  beforeAll(async () => {
    target = await startFuzzTarget(['--max-connections', '20']);
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
  });

  afterAll(async () => {
    agent.destroy();
    await target.stop();
  });

  /** A raw connection that declares `length` bytes of body and sends one; `from` its address. */
  async function trickle(
    length: number,
    from?: string,
  ): Promise<{ socket: TLSSocket; closed: Promise<string> }> {
    const socket = await rawConnection(target, from);
    let data = '';
    socket.on('data', (b: Buffer) => (data += b.toString()));
    socket.on('error', () => undefined);
    const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(data)));
    socket.write(`POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n{`);
    return { socket, closed };
  }

  it('answers a real review at once while large bodies trickle in, and cuts those off', async () => {
    // Three bodies declared at the limit fill the large-body budget, one byte each: a real
    // review (6 KB) must not wait behind them.
    const large = await Promise.all([1, 2, 3].map(() => trickle(7 * 1024 * 1024)));
    const started = Date.now();
    expect(judge(realisticCase('beside'), await post(target, agent, realisticCase('beside')))).toBe(
      true,
    );
    expect(Date.now() - started).toBeLessThan(2000);
    // Granted, a large body must arrive at 1 MiB/s (plus 2 s): these are answered 408 in 9 s.
    const answers = await Promise.all(large.slice(0, 2).map((l) => l.closed));
    for (const a of answers) expect(a).toMatch(/^HTTP\/1\.1 408/);
    large[2]?.socket.destroy();
  }, 20_000);

  it("answers another client's large review at once while one keeps the budget full", async () => {
    // Six bodies declared at the limit from one client, one byte each: two hold the budget
    // (14 of 16 MiB) for 2 s, four wait. A real review over 64 KiB from another address waited
    // behind those four, 4.5 s, almost the API server's timeout.
    const held = await Promise.all(
      Array.from({ length: 6 }, () => trickle(7 * 1024 * 1024, '127.0.0.2')),
    );
    await waitFor(
      'four large bodies waiting for the budget',
      async () => (await metricValue(target, 'outrigger_webhook_large_bodies_waiting')) === 4,
      { timeoutMs: 10_000 },
    );
    const review = largeRealisticCase('large-beside', 100 * 1024);
    const started = Date.now();
    expect(judge(review, await post(target, agent, review))).toBe(true);
    expect(Date.now() - started).toBeLessThan(1500);
    for (const h of held) h.socket.destroy();
  }, 20_000);

  it('keeps its connections under the cap: the oldest idle one makes room', async () => {
    agent.destroy();
    // Twenty keep-alive connections that each carried one review and now sit idle (the header
    // timeout is over for them: they sent a request).
    // One after another, so that the first is the one idle longest whatever the machine's load.
    const body = realisticCase('idle').body;
    const idle: { socket: Awaited<ReturnType<typeof rawConnection>>; closed: Promise<string> }[] =
      [];
    for (let i = 0; i < 20; i++) {
      const socket = await rawConnection(target);
      socket.on('error', () => undefined);
      const closed = new Promise<string>((resolve) => socket.on('close', () => resolve('closed')));
      const answered = new Promise<void>((resolve) => socket.once('data', () => resolve()));
      socket.write(
        `POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      await answered;
      idle.push({ socket, closed });
    }
    // A client at the cap is still served: the oldest idle connection is closed to make room.
    agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const reply = await post(target, agent, realisticCase('at-cap'));
    expect(judge(realisticCase('at-cap'), reply)).toBe(true);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>(
      (resolve) => (timer = setTimeout(() => resolve('open'), 10_000)),
    );
    expect(await Promise.race([idle[0]?.closed ?? timeout, timeout])).toBe('closed');
    clearTimeout(timer);
    for (const i of idle) i.socket.destroy();
  }, 30_000);
});
