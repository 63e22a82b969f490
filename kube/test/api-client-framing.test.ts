// Every request body goes with its length. Node frames a body on its own only for the methods it
// expects one on: a DELETE's DeleteOptions went out with neither Content-Length nor chunking, so
// the API server read a delete without its preconditions, and the body's bytes as the start of
// the next request on the same connection (its 400 Bad Request). Here a raw TCP server reads the
// bytes exactly as they arrive, as Go's HTTP server does.

import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { KubeApi } from '../src';

interface Request {
  head: string;
  body: string;
}

let server: Server;
let base: string;
const requests: Request[] = [];
const sockets = new Set<Socket>();

/** Parses requests off a keep-alive connection by their Content-Length, and answers each `{}`. */
function serve(socket: Socket): void {
  sockets.add(socket);
  let buffered = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = buffered.subarray(0, end).toString('latin1');
      const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
      if (buffered.length < end + 4 + length) return;
      const body = buffered.subarray(end + 4, end + 4 + length).toString('utf8');
      buffered = buffered.subarray(end + 4 + length);
      const valid = /^[A-Z]+ \S+ HTTP\/1\.1\r\n/.test(head);
      requests.push({ head: valid ? (head.split('\r\n')[0] ?? '') : 'malformed', body });
      socket.write(
        valid
          ? 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}'
          : 'HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n',
      );
    }
  });
  socket.on('close', () => sockets.delete(socket));
}

beforeAll(async () => {
  server = createServer(serve);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((resolve) => server.close(resolve));
});

describe('KubeApi request bodies', () => {
  it.each([
    ['DELETE', (api: KubeApi) => api.delete('/api/v1/namespaces/a/pods/p', undefined, OPTIONS)],
    ['POST', (api: KubeApi) => api.create('/api/v1/namespaces/a/events', OPTIONS)],
    ['PATCH', (api: KubeApi) => api.patch('/api/v1/namespaces/a/pods/p', OPTIONS)],
    ['PUT', (api: KubeApi) => api.replace('/api/v1/namespaces/a/pods/p', OPTIONS)],
  ])(
    'a %s sends its whole body with its length, and the next request on the connection is read whole',
    async (method, call) => {
      requests.length = 0;
      const api = new KubeApi({ server: base, token: () => 'sekret' });
      await call(api);
      await api.create('/api/v1/namespaces/a/events', { reason: 'Next' });
      expect(requests).toEqual([
        {
          head: expect.stringMatching(new RegExp(`^${method} /api/v1/`)),
          body: JSON.stringify(OPTIONS),
        },
        { head: 'POST /api/v1/namespaces/a/events HTTP/1.1', body: '{"reason":"Next"}' },
      ]);
    },
  );

  it('counts the bytes of a body, not its characters', async () => {
    requests.length = 0;
    const api = new KubeApi({ server: base, token: () => 'sekret' });
    const body = { message: 'déjà vu — 雪' };
    await api.create('/api/v1/namespaces/a/events', body);
    await api.create('/api/v1/namespaces/a/events', { reason: 'Next' });
    expect(requests.map((r) => r.body)).toEqual([JSON.stringify(body), '{"reason":"Next"}']);
  });
});

const OPTIONS = {
  apiVersion: 'v1',
  kind: 'DeleteOptions',
  preconditions: { uid: 'u-1', resourceVersion: '42' },
};
