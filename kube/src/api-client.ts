// The Kubernetes API as plain JSON over HTTPS: requests by path and watches as streams of lines.
// The components read and write a handful of kinds by path; they need neither the generated
// types' classes nor their (de)serializers. Keep-alive connections are reused. An error answer
// becomes an ApiError carrying the HTTP status as `code` and the server's Status document as
// `body`, which errors.ts reads.

import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { ClusterAccess } from './cluster-access';

export class ApiError extends Error {
  constructor(
    /** The HTTP status. */
    readonly code: number,
    /** The answer's body: a Status document, usually. */
    readonly body: string,
    what: string,
  ) {
    super(`${what}: HTTP ${code}: ${statusMessage(body)}`);
    this.name = 'ApiError';
  }
}

function statusMessage(body: string): string {
  try {
    const message = (JSON.parse(body) as { message?: unknown }).message;
    if (typeof message === 'string') return message;
  } catch {
    // not a Status document
  }
  return body.slice(0, 200);
}

export type Query = Record<string, string | number | boolean | undefined>;
/** `apply`: server-side apply (the query names the fieldManager, and `force` when it takes fields over). */
export type PatchType = 'merge' | 'strategic' | 'json' | 'apply';

const PATCH_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  // JSON is YAML: the body goes as JSON.
  apply: 'application/apply-patch+yaml',
};

/** A request gets no answer in this long: it fails (and is retried by whoever asked). */
const REQUEST_TIMEOUT_MS = 60_000;
/** A watch that carries nothing, not even a bookmark, for this long is ended. */
const WATCH_IDLE_MS = 5 * 60_000;

export class KubeApi {
  private readonly agent: Agent;
  private readonly plain: boolean;

  constructor(private readonly access: ClusterAccess) {
    this.plain = access.server.startsWith('http:');
    this.agent = new Agent({
      keepAlive: true,
      maxSockets: 32,
      ca: access.ca,
      cert: access.cert,
      key: access.key,
      rejectUnauthorized: !access.insecureSkipTlsVerify,
    });
  }

  get<T>(path: string, query?: Query): Promise<T> {
    return this.send<T>('GET', path, { query });
  }

  create<T>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.send<T>('POST', path, { body, query });
  }

  replace<T>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.send<T>('PUT', path, { body, query });
  }

  patch<T>(path: string, body: unknown, type: PatchType = 'merge', query?: Query): Promise<T> {
    return this.send<T>('PATCH', path, { body, query, contentType: PATCH_TYPES[type] });
  }

  /** A delete; `body` is its DeleteOptions (preconditions, propagation), when any. */
  delete<T>(path: string, query?: Query, body?: unknown): Promise<T> {
    return this.send<T>('DELETE', path, { query, body });
  }

  private url(path: string, query: Query = {}): URL {
    const url = new URL(this.access.server + path);
    for (const [key, value] of Object.entries(query))
      if (value !== undefined) url.searchParams.set(key, String(value));
    return url;
  }

  private open(
    method: string,
    url: URL,
    body?: { contentType: string; bytes: number },
  ): ClientRequest {
    const headers: Record<string, string> = { Accept: 'application/json' };
    // Always with its length: Node frames a body by itself only on the methods it expects one
    // on, and a DELETE's DeleteOptions would go out unframed, read by the API server as the
    // start of the next request on the connection, and its preconditions never applied.
    if (body) {
      headers['Content-Type'] = body.contentType;
      headers['Content-Length'] = String(body.bytes);
    }
    const token = this.access.token?.();
    if (token) headers.Authorization = `Bearer ${token}`;
    return this.plain
      ? httpRequest(url, { method, headers })
      : httpsRequest(url, { method, headers, agent: this.agent });
  }

  private send<T>(
    method: string,
    path: string,
    options: { query?: Query; body?: unknown; contentType?: string },
  ): Promise<T> {
    const url = this.url(path, options.query);
    const what = `${method} ${url.pathname}`;
    return new Promise<T>((resolve, reject) => {
      // A pooled socket keeps the request it served, and so these listeners, reachable until it
      // closes (Node holds at least the request that opened it): once settled, nothing they
      // reach may hold the answer, or every idle socket would keep a whole page of a list.
      let pending: { resolve: (value: T) => void; reject: (err: Error) => void } | undefined = {
        resolve,
        reject,
      };
      const settle = (outcome: { err: Error } | { value: T }): void => {
        const waiting = pending;
        pending = undefined;
        if (!waiting) return;
        if ('err' in outcome) waiting.reject(outcome.err);
        else waiting.resolve(outcome.value);
      };
      const fail = (err: Error): void => settle({ err });
      const body = options.body === undefined ? undefined : JSON.stringify(options.body);
      const req = this.open(
        method,
        url,
        body === undefined
          ? undefined
          : {
              contentType: options.contentType ?? 'application/json',
              bytes: Buffer.byteLength(body),
            },
      );
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(timeoutError(`${what}: no answer in ${REQUEST_TIMEOUT_MS / 1000}s`)),
      );
      req.on('error', fail);
      req.on('response', (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('end', () => {
          const textBody = Buffer.concat(chunks).toString('utf8');
          chunks.length = 0;
          const status = res.statusCode ?? 0;
          if (status >= 300) return fail(new ApiError(status, textBody, what));
          let value: T;
          try {
            value = (textBody ? JSON.parse(textBody) : undefined) as T;
          } catch (err) {
            return fail(new Error(`${what}: the answer is not JSON: ${String(err)}`));
          }
          settle({ value });
        });
      });
      req.end(body);
    });
  }

  /**
   * A watch: `onOpen` once the server accepted it, `onEvent` with each event's type and object,
   * then `onDone` once, with null when the server ended it and an error otherwise. Returns a
   * function that ends it (no onDone).
   */
  watch(
    path: string,
    query: Query,
    on: {
      open: () => void;
      event: (type: string, object: Record<string, unknown>) => void;
      done: (err: Error | null) => void;
    },
  ): () => void {
    const url = this.url(path, { ...query, watch: true });
    const what = `watch ${url.pathname}`;
    let finished = false;
    const finish = (err: Error | null): void => {
      if (finished) return;
      finished = true;
      req.destroy();
      on.done(err);
    };
    let req: ClientRequest;
    try {
      req = this.open('GET', url);
    } catch (err) {
      // The token file unreadable (mid-rotation): the watch ends, its owner retries; no throw.
      finished = true;
      queueMicrotask(() => on.done(err instanceof Error ? err : new Error(String(err))));
      return () => undefined;
    }
    req.setTimeout(WATCH_IDLE_MS, () => finish(timeoutError(`${what}: idle`)));
    req.on('error', (err) => finish(err));
    req.on('response', (res: IncomingMessage) => {
      if ((res.statusCode ?? 0) !== 200) {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          finish(new ApiError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), what)),
        );
        return;
      }
      on.open();
      let rest = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (finished || !line.trim()) continue;
          let event: { type?: string; object?: Record<string, unknown> };
          try {
            event = JSON.parse(line) as typeof event;
          } catch {
            finish(new Error(`${what}: a line that is not JSON`));
            return;
          }
          try {
            on.event(event.type ?? '', event.object ?? {});
          } catch (err) {
            // The reader's own failure ends the watch (its owner restarts it), never the process.
            finish(err instanceof Error ? err : new Error(String(err)));
            return;
          }
        }
      });
      res.on('end', () => finish(null));
      res.on('error', (err) => finish(err));
    });
    req.end();
    return () => {
      finished = true;
      req.destroy();
    };
  }
}

function timeoutError(message: string): Error {
  const err = new Error(message);
  err.name = 'TimeoutError';
  return err;
}
