// Reading request bodies under two byte budgets: one per request (larger gets 413) and one
// shared by the large bodies in flight, so that no mix of large or slow bodies can take the
// process over its memory limit. A large request reserves its whole declared length before its
// first byte is read, and waits, unread, until the shared budget has room: reading only part
// of many bodies at once could fill the budget with requests that can never all finish. Each
// client's requests wait in their order, and the client holding least (with what it asks) is
// served first. Once granted, a large body must keep to a minimum rate from 2 s on, so a client
// that declares megabytes and sends a byte at a time, or nothing, holds the budget for about
// 2 s, not for the whole request timeout.
// Small bodies (every real review) never wait: what they can hold is bounded by the number of
// connections, so no large or slow client can keep them out; at that cap a connection whose body
// is still arriving can make room for a new one (connections.ts).

import type { IncomingMessage } from 'node:http';
import { clientOf } from './client-address';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`request body over the limit of ${limit} bytes`);
    this.name = 'BodyTooLargeError';
  }
}

/** A large body that did not arrive at the minimum rate: answered 408. */
export class BodyTooSlowError extends Error {
  constructor(received: number, afterMs: number) {
    super(
      `request body arrived too slowly: ${received} bytes in ${afterMs} ms, where at least ${MIN_BYTES_PER_SECOND} bytes a second are needed after the first ${DEADLINE_BASE_MS} ms`,
    );
    this.name = 'BodyTooSlowError';
  }
}

/** Bodies of at most this many bytes are read at once, outside the shared budget. */
export const SMALL_BODY_BYTES = 64 * 1024;
/** The slowest a large body may arrive once it is granted: the API server sends at LAN speed. */
const MIN_BYTES_PER_SECOND = 1024 * 1024;
const DEADLINE_BASE_MS = 2000;
/** How often a large body's progress is held to the minimum rate. */
const PROGRESS_CHECK_MS = 250;

/**
 * The shared budget: bytes reserved by the requests being read or answered, and by whom (the
 * client, client-address.ts). Each client's requests are granted in the order they asked;
 * between clients, the one holding least, with what it asks, goes first. So a client that
 * declares large bodies and stalls holds up its own queue, not another's: the API server, which
 * holds next to nothing of this budget and asks for a real review's size, is served at the next
 * room however many requests that client, or a few of them, keep waiting. Requests from one
 * address (all of them, in a test on 127.0.0.1) are served first come, first served.
 */
export class BodyBudget {
  private reserved = 0;
  /** Bytes reserved by each client that holds any. */
  private readonly held = new Map<string, number>();
  /** In the order asked. */
  private readonly waiting: { bytes: number; client: string; grant: () => void }[] = [];

  constructor(readonly totalBytes: number) {}

  get inUse(): number {
    return this.reserved;
  }

  get waitingCount(): number {
    return this.waiting.length;
  }

  /**
   * Asks for `bytes` for `client`; `granted` resolves once they are reserved. `cancel` withdraws
   * a request not granted yet (its client went away while it waited).
   */
  reserve(bytes: number, client = ''): { granted: Promise<void>; cancel: () => void } {
    if (this.waiting.length === 0 && this.fits(bytes)) {
      this.take(bytes, client);
      return { granted: Promise.resolve(), cancel: () => undefined };
    }
    let entry = { bytes, client, grant: (): void => undefined };
    const granted = new Promise<void>((grant) => (entry = { bytes, client, grant }));
    this.waiting.push(entry);
    const cancel = (): void => {
      const i = this.waiting.indexOf(entry);
      if (i < 0) return;
      this.waiting.splice(i, 1);
      this.grantWaiting();
    };
    // It may go ahead of other clients' requests at once.
    this.grantWaiting();
    return { granted, cancel };
  }

  release(bytes: number, client = ''): void {
    this.reserved -= bytes;
    const left = (this.held.get(client) ?? 0) - bytes;
    if (left > 0) this.held.set(client, left);
    else this.held.delete(client);
    this.grantWaiting();
  }

  private take(bytes: number, client: string): void {
    this.reserved += bytes;
    this.held.set(client, (this.held.get(client) ?? 0) + bytes);
  }

  /**
   * Grants the next request while it fits: the oldest request of the client whose holding plus
   * that request is least (the oldest such request on a tie), so a client asking for a little is
   * not stuck behind one holding nothing that asks for megabytes. One that does not fit waits
   * for room, and the others behind it: none waits for ever, as what is held drains.
   */
  private grantWaiting(): void {
    for (;;) {
      const i = this.next();
      const next = this.waiting[i];
      if (!next || !this.fits(next.bytes)) return;
      this.waiting.splice(i, 1);
      this.take(next.bytes, next.client);
      next.grant();
    }
  }

  /** The index of the request to grant next, -1 with none waiting. */
  private next(): number {
    let best = -1;
    let least = Infinity;
    const seen = new Set<string>();
    this.waiting.forEach(({ client, bytes }, i) => {
      if (seen.has(client)) return; // only each client's oldest
      seen.add(client);
      const weight = (this.held.get(client) ?? 0) + bytes;
      if (weight < least) [best, least] = [i, weight];
    });
    return best;
  }

  /** A request larger than the whole budget still runs, alone, so it cannot wait for ever. */
  private fits(bytes: number): boolean {
    return this.reserved === 0 || this.reserved + bytes <= this.totalBytes;
  }
}

export interface Body {
  bytes: Buffer;
  /** Gives the reservation back; call once the answer no longer needs the body. */
  release: () => void;
}

/** The release of a small body, which reserves nothing. */
const nothingReserved = (): void => undefined;

/** The length a body declares, when it declares a whole number of bytes. */
function declaredLength(req: IncomingMessage): number | undefined {
  // Node's parser refuses a malformed Content-Length; checked again so the budget's arithmetic
  // can never see anything but a whole number.
  const length = Number(req.headers['content-length'] ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
}

/**
 * How a body is read: at once and outside the budget (readSmallBody) when it declares at most
 * SMALL_BODY_BYTES within `limit`, else by readBody. Undefined for the latter.
 */
export function smallBody(
  req: IncomingMessage,
  limit: number,
): { declared: number; limit: number } | undefined {
  const declared = declaredLength(req);
  if (declared === undefined || declared > limit || declared > SMALL_BODY_BYTES) return undefined;
  return { declared, limit };
}

/**
 * Reads a body smallBody() said is small, and calls `done` once: with its bytes, or with why
 * they could not be read. Without a promise in between: the webhook answers such a body (every
 * real review) in the same turn of the event loop as its last byte arrives.
 */
export function readSmallBody(
  req: IncomingMessage,
  small: { declared: number; limit: number },
  done: Read,
): void {
  collect(req, small.limit, small.declared, done);
}

/**
 * Reads the body of `req`, at most `limit` bytes; a large one inside `budget`. A body without a
 * declared length (chunked) counts as large and reserves the whole limit, as its size is known
 * only at its end.
 */
export async function readBody(
  req: IncomingMessage,
  limit: number,
  budget: BodyBudget,
): Promise<Body> {
  const declared = declaredLength(req);
  if (declared !== undefined && declared > limit) throw new BodyTooLargeError(limit);
  if (declared !== undefined && declared <= SMALL_BODY_BYTES)
    return { bytes: await collected(req, limit, declared), release: nothingReserved };
  const reserved = declared ?? limit;
  // By address: the API server's connections share one, a client's share another.
  const client = clientOf(req.socket.remoteAddress);
  req.pause();
  await waitForBudget(req, budget, reserved, client);
  let released = false;
  const release = (): void => {
    if (released) return;
    released = true;
    budget.release(reserved, client);
  };
  // Held to the rate all along, not only at the end: a client that declares megabytes and then
  // sends nothing gave up the budget after its whole deadline (9 s for 7 MB), and those queued
  // behind it (a real review over 64 KiB among them) waited past the API server's timeout.
  let timer: NodeJS.Timeout | undefined;
  const tooSlow = new Promise<never>((_, reject) => {
    const started = performance.now();
    let received = 0;
    req.on('data', (chunk: Buffer) => (received += chunk.length));
    timer = setInterval(() => {
      const elapsed = performance.now() - started;
      const due = ((elapsed - DEADLINE_BASE_MS) / 1000) * MIN_BYTES_PER_SECOND;
      if (received >= Math.min(due, reserved)) return;
      req.removeAllListeners('data');
      reject(new BodyTooSlowError(received, Math.round(elapsed)));
    }, PROGRESS_CHECK_MS);
  });
  try {
    const bytes = await Promise.race([collected(req, limit, declared), tooSlow]);
    return { bytes, release };
  } catch (err) {
    release();
    throw err;
  } finally {
    clearInterval(timer);
  }
}

/** Waits for the reservation; a client that goes away meanwhile gives up its place. */
function waitForBudget(
  req: IncomingMessage,
  budget: BodyBudget,
  bytes: number,
  client: string,
): Promise<void> {
  const gone = new Error('the client closed the connection before its body was read');
  return new Promise((resolve, reject) => {
    const ticket = budget.reserve(bytes, client);
    const onClose = (): void => {
      ticket.cancel();
      reject(gone);
    };
    req.once('close', onClose);
    void ticket.granted.then(() => {
      req.off('close', onClose);
      if (!req.destroyed) return resolve();
      budget.release(bytes, client);
      reject(gone);
    });
  });
}

/**
 * A body's chunks as they come. Most bodies come in one chunk, which is then the body as it is:
 * nothing allocated, nothing copied. From the second on, with a declared size, every chunk is
 * copied into one buffer of that size and freed at once (no copy twice, and no pile of chunks);
 * without one, they are joined at the end.
 */
class Chunks {
  size = 0;
  private first: Buffer | undefined;
  private whole: Buffer | undefined;
  private readonly rest: Buffer[] = [];

  constructor(private readonly declared: number | undefined) {}

  add(chunk: Buffer): void {
    const length = chunk.length; // 0 once the chunk is freed
    if (this.size === 0) this.first = chunk;
    else if (this.declared === undefined) this.rest.push(chunk);
    else {
      if (!this.whole) this.whole = this.copyFirst(this.declared);
      chunk.copy(this.whole, this.size);
      freeNow(chunk);
    }
    this.size += length;
  }

  private copyFirst(declared: number): Buffer {
    const whole = Buffer.allocUnsafe(declared);
    if (this.first) {
      this.first.copy(whole, 0);
      freeNow(this.first);
      this.first = undefined;
    }
    return whole;
  }

  bytes(): Buffer {
    if (this.whole) return this.whole.subarray(0, this.size);
    if (this.rest.length === 0) return this.first ?? Buffer.alloc(0);
    const all = this.first ? [this.first, ...this.rest] : this.rest;
    const joined = Buffer.concat(all, this.size);
    for (const chunk of all) freeNow(chunk);
    return joined;
  }
}

/** A failure as an Error (a stream may emit anything). */
const asError = (failure: unknown): Error =>
  failure instanceof Error ? failure : new Error(`the body could not be read: ${String(failure)}`);

/** The body's bytes, at most `declared` (or `limit`) of them. */
function collected(req: IncomingMessage, limit: number, declared: number | undefined) {
  return new Promise<Buffer>((resolve, reject) =>
    collect(req, limit, declared, (bytes, failure) =>
      bytes ? resolve(bytes) : reject(asError(failure)),
    ),
  );
}

/**
 * What a read gives: the bytes, or (without them) why they could not be read. Told apart by
 * position, not by `instanceof Error`: an error emitted by the stream need not be an Error of
 * this realm (in jest's it is not), nor an Error at all.
 */
export type Read = (bytes: Buffer | undefined, failure?: unknown) => void;

/** Reads the body's bytes, at most `declared` (or `limit`) of them; calls `done` once. */
function collect(
  req: IncomingMessage,
  limit: number,
  declared: number | undefined,
  done: Read,
): void {
  const chunks = new Chunks(declared);
  const max = declared ?? limit;
  // Removed once the body is read: the request closes after every answer, and an Error made
  // then for an outcome long given cost a stack trace per request. The error listener stays
  // (an error with none would end the process), and calls `done` only if nothing else did.
  let settled = false;
  const settle = (bytes: Buffer | undefined, failure?: unknown): void => {
    if (settled) return;
    settled = true;
    req.off('data', onData);
    req.off('end', onEnd);
    req.off('close', onClose);
    done(bytes, failure);
  };
  const onData = (chunk: Buffer): void => {
    if (chunks.size + chunk.length <= max) return chunks.add(chunk);
    req.resume();
    settle(undefined, new BodyTooLargeError(limit));
  };
  const onEnd = (): void => settle(chunks.bytes());
  const onClose = (): void =>
    settle(undefined, new Error('the connection closed before the body ended'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', (err) => settle(undefined, err));
  req.on('close', onClose);
  req.resume();
}

/**
 * Frees bytes no longer needed now instead of at V8's next garbage collection: a body's chunks
 * once copied out, and the body itself once answered. Node reads a body in chunks of up to
 * 16 KiB, each in memory of its own from malloc, outside V8's heap, and a body of more than
 * 4 KiB gets a buffer of its own there too. Their bytes do not hasten a collection (a large
 * body's chunks come with little else for V8 to collect, and a body handed to the worker thread
 * waits for that thread's collector), so tens of MiB of dead ones piled up between two. glibc
 * hands back only the top of its heap, and later allocations land above them: that high-water
 * mark stayed resident after every body had been answered (the heap grew from 15 to 59 MiB over
 * 150 large bodies, and stays at 16 when the chunks are freed here). Detaching the ArrayBuffer
 * (transferring it to a length of 0) frees its memory at once. Only bytes that own their whole
 * buffer: a slice of a shared one (Node's pool for small buffers) is left alone, and so is a
 * buffer already detached (handed to the worker).
 */
export function freeNow(bytes: Uint8Array): void {
  const buffer = bytes.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer };
  if (buffer.byteLength === 0) return;
  if (bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength) return;
  buffer.transfer?.(0);
}
