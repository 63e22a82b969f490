// Connection behaviours of a hostile client against the real HTTPS admission server, beside the
// fuzz suite's request bodies: what a client that opens connections and sends nothing can hold.

import { readFileSync } from 'node:fs';
import type { Server } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { SERVER_TIMEOUTS, startHttps } from '../src/server';
import { makeCert } from './support';

jest.setTimeout(30_000);

let server: Server;
let port: number;

beforeAll(async () => {
  const cert = makeCert();
  const pair = { cert: readFileSync(cert.cert, 'utf8'), key: readFileSync(cert.key, 'utf8') };
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

const closed = (socket: TLSSocket): Promise<number> =>
  new Promise((resolve) => {
    const start = Date.now();
    socket.on('close', () => resolve(Date.now() - start));
  });

describe('a client that completes the TLS handshake and sends nothing', () => {
  it('is closed once the headers timeout has passed, not held for ever', async () => {
    // Node's headersTimeout starts with a request's first byte: these held a file descriptor
    // and memory until the client went away, so enough of them took the process down.
    const sockets = await Promise.all(Array.from({ length: 20 }, handshaken));
    // A connection that carried a request stays open for its keep-alive, as the API server's do.
    const used = await handshaken();
    used.write('GET / HTTP/1.1\r\nhost: x\r\n\r\n');
    const waits = await Promise.all(sockets.map(closed));
    for (const ms of waits) expect(ms).toBeLessThan(SERVER_TIMEOUTS.headersTimeout + 3000);
    expect(used.destroyed).toBe(false);
    used.destroy();
  });
});
