// The shared body budget: each client's requests are granted in the order they asked, the
// client that holds least first, a request that does not fit waits unread, a withdrawn request gives up its place, and a body larger than the
// whole budget still runs alone. readBody gives back every byte however the body arrives.

import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BodyBudget, freeNow, readBody } from '../src/body';

async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('BodyBudget', () => {
  it('grants what fits at once and makes the rest wait, in order', async () => {
    const budget = new BodyBudget(100);
    expect(await settled(budget.reserve(60).granted)).toBe(true);
    const second = budget.reserve(50);
    const third = budget.reserve(10);
    // The third would fit, but it asked after the second: first come, first served.
    expect(await settled(second.granted)).toBe(false);
    expect(await settled(third.granted)).toBe(false);
    budget.release(60);
    expect(await settled(second.granted)).toBe(true);
    expect(await settled(third.granted)).toBe(true);
    expect(budget.inUse).toBe(60);
  });

  it("serves the client that holds least first: one client's queue does not hold up another's", async () => {
    const budget = new BodyBudget(100);
    // One client holds 80 and has two more waiting; another asks for 40 after them.
    const held = [budget.reserve(40, 'a'), budget.reserve(40, 'a')];
    expect(await settled(Promise.all(held.map((h) => h.granted)).then())).toBe(true);
    const [first, second] = [budget.reserve(40, 'a'), budget.reserve(40, 'a')];
    const other = budget.reserve(40, 'b');
    expect(await settled(other.granted)).toBe(false);
    // Room for one: the client holding nothing goes first, not the one that asked first.
    budget.release(40, 'a');
    expect(await settled(other.granted)).toBe(true);
    expect(await settled(first.granted)).toBe(false);
    budget.release(40, 'b');
    expect(await settled(first.granted)).toBe(true);
    expect(await settled(second.granted)).toBe(false);
    expect(budget.inUse).toBe(80);
  });

  it('grants at once what fits for a client holding nothing, while another waits', async () => {
    const budget = new BodyBudget(100);
    void budget.reserve(60, 'a').granted;
    const big = budget.reserve(60, 'a');
    // A client that declares a large body and stalls: another's body that fits is not queued
    // behind the ones it keeps waiting.
    expect(await settled(budget.reserve(30, 'b').granted)).toBe(true);
    expect(await settled(big.granted)).toBe(false);
    budget.release(60, 'a');
    budget.release(30, 'b');
    expect(await settled(big.granted)).toBe(true);
  });

  it('weighs what a client holds with what it asks: a small request is not stuck behind a large one', async () => {
    const budget = new BodyBudget(160);
    void budget.reserve(70, 'a').granted;
    void budget.reserve(70, 'a').granted;
    // Another client holding nothing asks for 70, which does not fit; then one asks for 1.
    const large = budget.reserve(70, 'c');
    expect(await settled(budget.reserve(1, 'api').granted)).toBe(true);
    expect(await settled(large.granted)).toBe(false);
  });

  it('lets a withdrawn request go, and the next one in', async () => {
    const budget = new BodyBudget(100);
    void budget.reserve(90).granted;
    const big = budget.reserve(50);
    const small = budget.reserve(5);
    big.cancel();
    expect(await settled(small.granted)).toBe(true);
    expect(budget.inUse).toBe(95);
  });

  it('runs a body larger than the whole budget alone', async () => {
    const budget = new BodyBudget(100);
    expect(await settled(budget.reserve(500).granted)).toBe(true);
    const next = budget.reserve(1);
    expect(await settled(next.granted)).toBe(false);
    budget.release(500);
    expect(await settled(next.granted)).toBe(true);
  });
});

describe('readBody', () => {
  let server: Server;
  let chunksSeen: Buffer[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.on('data', (chunk: Buffer) => chunksSeen.push(chunk));
      void readBody(req, 1 << 24, new BodyBudget(1 << 24)).then(
        (body) => {
          body.release();
          res.end(body.bytes.toString('hex'));
        },
        (err: Error) => res.writeHead(500).end(err.message),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends `body` in pieces of `piece` bytes, with its length declared or chunked. */
  function send(body: Buffer, piece: number, declared: boolean): Promise<string> {
    const { port } = server.address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const headers = declared ? { 'content-length': body.length } : {};
      const req = request({ host: '127.0.0.1', port, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => resolve(text));
      });
      req.on('error', reject);
      for (let at = 0; at < body.length; at += piece) req.write(body.subarray(at, at + piece));
      req.end();
    });
  }

  const body = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 251));

  it.each([
    ['declared, small', 1000, true],
    ['declared, large', body.length, true],
    ['chunked, large', body.length, false],
  ])('gives back every byte of a body in pieces (%s)', async (_, size, declared) => {
    chunksSeen = [];
    const part = body.subarray(0, size);
    expect(await send(part, 7000, declared)).toBe(part.toString('hex'));
    expect(chunksSeen.length).toBeGreaterThan(0);
  });

  it('cuts off a large body that stops arriving once it falls behind the minimum rate', async () => {
    const { port } = server.address() as AddressInfo;
    const started = performance.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const headers = { 'content-length': 7_000_000 };
      const req = request({ host: '127.0.0.1', port, method: 'POST', headers }, (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () => {
          req.destroy();
          resolve(text);
        });
      });
      req.on('error', reject);
      req.write(body.subarray(0, 100_000)); // then nothing: the client holds the budget
    });
    expect(answer).toMatch(/^request body arrived too slowly: 100000 bytes in \d+ ms/);
    // Its whole deadline would have been 2 s + 7 MB at 1 MiB/s, 8.7 s: it is cut off at about
    // 2.1 s, once 100 KB is behind what the rate asks.
    expect(performance.now() - started).toBeLessThan(6000);
  });

  it('frees each chunk once it is copied out, instead of at the next collection', async () => {
    chunksSeen = [];
    await send(body, 16_384, true);
    // A freed chunk's buffer is detached: its length is 0.
    expect(chunksSeen.every((c) => c.length === 0)).toBe(true);
  });
});

describe('freeNow', () => {
  it('frees bytes that own their buffer, and leaves slices and freed buffers alone', () => {
    const own = Buffer.allocUnsafeSlow(20_000);
    freeNow(own);
    expect(own.length).toBe(0);
    // Small buffers are slices of Node's shared pool: freeing one would free its neighbours.
    const pooled = Buffer.from('a small body');
    freeNow(pooled);
    expect(pooled.toString()).toBe('a small body');
    expect(() => freeNow(own)).not.toThrow();
  });
});
