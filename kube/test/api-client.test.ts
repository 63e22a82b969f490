// The plain-JSON API client against a local HTTP server that answers as an API server does:
// what it sends (method, path, query, content type, token), what an error answer becomes, and a
// watch's events, its end, and a line that is not JSON; and over HTTPS, that a pooled connection
// keeps no answer alive.

import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { makeServingCert, waitFor } from '@outrigger/testkit';
import { ApiError, KubeApi, apiErrorMessage, httpStatus, isConflict } from '../src';

interface Seen {
  method: string;
  url: string;
  contentType: string | undefined;
  authorization: string | undefined;
  body: string;
}

let server: Server;
let base: string;
const seen: Seen[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('{}');

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        url: req.url ?? '',
        contentType: req.headers['content-type'],
        authorization: req.headers.authorization,
        body: Buffer.concat(chunks).toString('utf8'),
      });
      answer(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

beforeEach(() => {
  seen.length = 0;
});

const api = () => new KubeApi({ server: base, token: () => 'sekret' });

describe('KubeApi', () => {
  it('sends a merge patch with its content type, query and token, and parses the answer', async () => {
    answer = (_req, res) => res.end(JSON.stringify({ metadata: { name: 'web' } }));
    const out = await api().patch(
      '/apis/apps/v1/namespaces/shop/deployments/web',
      { a: null },
      'merge',
      {
        fieldManager: 'outrigger-controller',
      },
    );
    expect(out).toEqual({ metadata: { name: 'web' } });
    expect(seen[0]).toEqual({
      method: 'PATCH',
      url: '/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=outrigger-controller',
      contentType: 'application/merge-patch+json',
      authorization: 'Bearer sekret',
      body: '{"a":null}',
    });
  });

  it('turns an error answer into an ApiError with the status and the Status document', async () => {
    const status = { kind: 'Status', message: 'the object has been modified', code: 409 };
    answer = (_req, res) => {
      res.statusCode = 409;
      res.end(JSON.stringify(status));
    };
    const err: unknown = await api()
      .replace('/api/v1/namespaces/x/secrets/y', {})
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(httpStatus(err)).toBe(409);
    expect(isConflict(err)).toBe(true);
    expect(apiErrorMessage(err)).toBe('the object has been modified');
    expect(seen[0]?.method).toBe('PUT');
  });

  it('fails, without a status, when nothing listens', async () => {
    const down = new KubeApi({ server: 'http://127.0.0.1:1' });
    const err: unknown = await down.get('/version').catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/ECONNREFUSED/);
    expect(httpStatus(err)).toBeUndefined();
  });

  it('fails, never hangs, when the API server dies in the middle of an answer', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"items":[{"metadata":');
      setTimeout(() => res.socket?.destroy(), 10);
    };
    await expect(api().get('/apis/apps/v1/deployments')).rejects.toThrow();
  });

  it('streams a watch: open, each event, then the end', async () => {
    answer = (_req, res) => {
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MODI');
      setTimeout(() => {
        res.write('FIED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n');
        res.end();
      }, 20);
    };
    const events: string[] = [];
    const done = await new Promise<Error | null>((resolve) => {
      api().watch(
        '/api/v1/namespaces',
        { resourceVersion: '1', allowWatchBookmarks: true },
        {
          open: () => events.push('open'),
          event: (type, object) =>
            events.push(`${type} ${String((object.metadata as { name: string }).name)}`),
          done: resolve,
        },
      );
    });
    expect(done).toBeNull();
    expect(events).toEqual(['open', 'ADDED a', 'MODIFIED a']);
    expect(seen[0]?.url).toBe(
      '/api/v1/namespaces?resourceVersion=1&allowWatchBookmarks=true&watch=true',
    );
  });

  it('ends a watch with an error on a line that is not JSON, and with the status when refused', async () => {
    answer = (_req, res) => res.end('not json\n');
    const bad = await new Promise<Error | null>((resolve) =>
      api().watch(
        '/api/v1/pods',
        {},
        { open: () => undefined, event: () => undefined, done: resolve },
      ),
    );
    expect(bad?.message).toMatch(/not JSON/);
    answer = (_req, res) => {
      res.statusCode = 410;
      res.end('{"kind":"Status","message":"too old resource version","code":410}');
    };
    const gone = await new Promise<Error | null>((resolve) =>
      api().watch(
        '/api/v1/pods',
        {},
        { open: () => undefined, event: () => undefined, done: resolve },
      ),
    );
    expect(httpStatus(gone)).toBe(410);
  });

  it('ends a watch with an error, never a throw, when the token cannot be read', async () => {
    const unreadable = new KubeApi({
      server: base,
      token: () => {
        throw new Error('ENOENT: the token file is being rotated');
      },
    });
    const done = await new Promise<Error | null>((resolve) =>
      unreadable.watch(
        '/api/v1/pods',
        {},
        { open: () => undefined, event: () => undefined, done: resolve },
      ),
    );
    expect(done?.message).toMatch(/token file is being rotated/);
    await expect(unreadable.get('/version')).rejects.toThrow(/token file is being rotated/);
  });

  it("ends a watch with the reader's error when its event handler throws", async () => {
    answer = (_req, res) => res.end('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
    const done = await new Promise<Error | null>((resolve) =>
      api().watch(
        '/api/v1/pods',
        {},
        {
          open: () => undefined,
          event: () => {
            throw new Error('the reader broke');
          },
          done: resolve,
        },
      ),
    );
    expect(done?.message).toBe('the reader broke');
  });
});

describe('KubeApi over HTTPS with pooled connections', () => {
  // Node keeps the request that opened a pooled TLS socket reachable from that socket for as
  // long as it stays open; an answer reachable from the request's listeners stayed in memory
  // with it (a whole page of a list, for each idle connection).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  let tls: HttpsServer;
  let tlsApi: KubeApi;

  beforeAll(async () => {
    const cert = makeServingCert({ name: 'api-client-test' });
    tls = createHttpsServer(
      { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) },
      (_req, res) => res.end(JSON.stringify({ items: [{ metadata: { name: 'web' } }] })),
    );
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const port = (tls.address() as AddressInfo).port;
    tlsApi = new KubeApi({ server: `https://127.0.0.1:${port}`, ca: Buffer.from(cert.caPem) });
  });

  afterAll(async () => {
    tls.closeAllConnections();
    await new Promise((resolve) => tls.close(resolve));
  });

  /** A weak reference to an answer nothing else holds, taken in a function of its own. */
  const answerRef = async (): Promise<WeakRef<object>> =>
    new WeakRef(await tlsApi.get<object>('/apis/apps/v1/deployments'));

  /**
   * Collects garbage until the answer is gone. The job that made the reference keeps its target
   * alive until it ends, so the first check may still see it. The wait ends well before the
   * server's keep-alive timeout (5 s): the connection it closes then would free a kept answer.
   */
  const collected = (ref: WeakRef<object>, what: string): Promise<void> =>
    waitFor(
      `the answer ${what} to be collected`,
      () => {
        gc();
        return ref.deref() === undefined;
      },
      { timeoutMs: 1_000 },
    );

  it('keeps no answer once it is given, on a new connection or a reused one', async () => {
    const first = await answerRef(); // opens the connection
    const second = await answerRef(); // reuses it
    await collected(first, 'that opened the connection');
    await collected(second, 'on the reused connection');
  });
});
