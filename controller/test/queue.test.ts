// The work queue's promises: merged keys, one run per key at a time, back-off, bounds, stop.
// All in virtual time: no test waits for a real clock.

import fc from 'fast-check';
import { TerminalError, WorkQueue, type ReconcileEvent } from '../src/watch/queue';
import { VirtualClock, gate, harness } from './queue-harness';

describe('WorkQueue: keys', () => {
  it('merges duplicate keys that wait, keeping first-come order', async () => {
    const h = harness({ concurrency: 1 });
    for (const key of ['Namespace/shop', 'Deployment/shop/web', 'Namespace/shop']) h.queue.add(key);
    h.queue.add('Deployment/shop/web');
    expect(h.queue.depth).toBe(2);
    h.queue.start();
    await h.clock.advance(0);
    expect(h.keys()).toEqual(['Namespace/shop', 'Deployment/shop/web']);
    expect(h.queue.depth).toBe(0);
  });

  it('merges keys added while another key blocks the only worker', async () => {
    const blocker = gate();
    const h = harness({
      concurrency: 1,
      work: (key) =>
        key === 'a'
          ? blocker.promise.then(() => ({ done: true }))
          : Promise.resolve({ done: true }),
    });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(0);
    for (let i = 0; i < 5; i++) h.queue.add('b');
    expect(h.queue.depth).toBe(1);
    blocker.open();
    await h.clock.advance(0);
    expect(h.keys()).toEqual(['a', 'b']);
  });

  it('runs a key added during its own run exactly once more, after that run ends', async () => {
    const first = gate();
    const h = harness({
      work: (_key, run) =>
        run === 1 ? first.promise.then(() => ({ done: true })) : Promise.resolve({ done: true }),
    });
    h.queue.start();
    h.queue.add('Deployment/shop/web');
    await h.clock.advance(10);
    for (let i = 0; i < 3; i++) h.queue.add('Deployment/shop/web');
    expect(h.queue.depth).toBe(1);
    await h.clock.advance(10);
    expect(h.runs).toHaveLength(1);
    first.open();
    await h.clock.advance(0);
    expect(h.runs).toHaveLength(2);
    expect(h.runs[1]?.start).toBeGreaterThanOrEqual(h.runs[0]?.end ?? Infinity);
    expect(h.overlaps).toEqual([]);
    await h.clock.advance(1000);
    expect(h.runs).toHaveLength(2);
  });

  it('never runs one key twice at once, bounds concurrency, and serves every add', async () => {
    // Adds at random virtual times, reconciles of random virtual durations: each add must be
    // followed by a run of its key that starts no earlier (level-triggered: nothing is lost).
    const add = fc.record({
      at: fc.integer({ min: 0, max: 500 }),
      key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'),
    });
    const schedule = fc.record({
      adds: fc.array(add, { minLength: 1, maxLength: 40 }),
      takes: fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 8 }),
      concurrency: fc.integer({ min: 1, max: 4 }),
    });
    await fc.assert(
      fc.asyncProperty(schedule, async ({ adds, takes, concurrency }) => {
        const clock = new VirtualClock();
        const h = harness({
          clock,
          concurrency,
          work: async (key, run) => {
            await clock.sleep(takes[(key.charCodeAt(0) + run) % takes.length] ?? 0);
            return { done: true };
          },
        });
        h.queue.start();
        for (const { at, key } of [...adds].sort((x, y) => x.at - y.at)) {
          await h.clock.advance(at - h.clock.now());
          h.queue.add(key);
        }
        await h.clock.advance(10_000);
        expect(h.overlaps).toEqual([]);
        expect(h.maxActive()).toBeLessThanOrEqual(concurrency);
        for (const { at, key } of adds) {
          expect(h.startsOf(key).some((start) => start >= at)).toBe(true);
        }
        expect(h.queue.depth).toBe(0);
      }),
      { numRuns: 60 },
    );
  });

  it('never runs more than `concurrency` keys at once, and uses all of them', async () => {
    const clock = new VirtualClock();
    const h = harness({
      clock,
      concurrency: 3,
      work: () => clock.sleep(1000).then(() => ({ done: true })),
    });
    h.queue.start();
    for (let i = 0; i < 10; i++) h.queue.add(`Deployment/shop/web-${i}`);
    await h.clock.advance(999);
    expect(h.runs).toHaveLength(3);
    await h.clock.advance(3001);
    expect(h.runs).toHaveLength(10);
    expect(h.maxActive()).toBe(3);
    expect(h.runs.map((r) => r.start)).toEqual([0, 0, 0, 1000, 1000, 1000, 2000, 2000, 2000, 3000]);
  });
});

describe('WorkQueue: results and errors', () => {
  const failing = () => Promise.reject(new Error('the API server said 503'));

  it('honours requeueAfterMs, then forgets the key once it is done', async () => {
    const h = harness({
      work: (_key, run) => Promise.resolve(run < 3 ? { requeueAfterMs: 30_000 } : { done: true }),
    });
    h.queue.start();
    h.queue.add('Deployment/shop/web');
    await h.clock.advance(29_999);
    expect(h.runs).toHaveLength(1);
    await h.clock.advance(1);
    expect(h.startsOf('Deployment/shop/web')).toEqual([0, 30_000]);
    await h.clock.advance(300_000);
    expect(h.startsOf('Deployment/shop/web')).toEqual([0, 30_000, 60_000]);
    expect(h.events.map((e) => e.outcome)).toEqual(['requeue', 'requeue', 'done']);
  });

  it('keeps the earliest of two delayed adds of a key', async () => {
    const h = harness();
    h.queue.start();
    h.queue.addAfter('a', 5000);
    h.queue.addAfter('a', 1000);
    h.queue.addAfter('a', 3000);
    expect(h.queue.depth).toBe(1);
    await h.clock.advance(10_000);
    expect(h.startsOf('a')).toEqual([1000]);
  });

  it('retries a failing key with exponential back-off up to the cap', async () => {
    const h = harness({ backoff: { baseMs: 100, capMs: 2000 }, work: failing });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(20_000);
    const starts = h.startsOf('a');
    const gaps = starts.slice(1).map((s, i) => s - (starts[i] ?? 0));
    // random() is 0.5 here, the middle of the jitter: the plain exponential sequence, which
    // stops at cap / (1 + jitter), so that the whole spread fits under the cap.
    expect(gaps.slice(0, 5)).toEqual([100, 200, 400, 800, 1600]);
    for (const gap of gaps.slice(5, 8)) expect(gap).toBeCloseTo(2000 / 1.2, 0);
    expect(h.events[0]).toMatchObject({ outcome: 'retry', failures: 1, delayMs: 100 });
  });

  it('spreads retries by the jitter, within ±jitter of the exponential delay', async () => {
    const draws = [0, 0.999, 0.25, 0.75, 0.1];
    let i = 0;
    const h = harness({
      backoff: { baseMs: 100, capMs: 60_000, jitter: 0.2 },
      random: () => draws[i++ % draws.length] ?? 0.5,
      work: failing,
    });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(10_000);
    const delays = h.events.slice(0, 5).map((e) => (e.outcome === 'retry' ? e.delayMs : NaN));
    expect(delays[0]).toBeCloseTo(80);
    expect(delays[1]).toBeCloseTo(200 * 1.1996);
    expect(delays[2]).toBeCloseTo(400 * 0.9);
    expect(delays[3]).toBeCloseTo(800 * 1.1);
    expect(delays[4]).toBeCloseTo(1600 * 0.84);
  });

  it('resets the back-off after a success', async () => {
    let fail = true;
    const h = harness({
      work: () => (fail ? failing() : Promise.resolve({ done: true })),
    });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(100 + 200 + 400 + 1);
    expect(h.startsOf('a')).toEqual([0, 100, 300, 700]);
    fail = false;
    await h.clock.advance(800);
    expect(h.events.map((e) => e.outcome)).toEqual(['retry', 'retry', 'retry', 'retry', 'done']);
    fail = true;
    h.queue.add('a');
    await h.clock.advance(0);
    expect(h.events.at(-1)).toMatchObject({ outcome: 'retry', failures: 1, delayMs: 100 });
  });

  it('waits for the larger of the back-off and the global retry bucket', async () => {
    // Keys that fail together: the first retry token is free, the rest come one a second.
    const h = harness({
      backoff: { baseMs: 10 },
      retryLimit: { ratePerSecond: 1, burst: 1 },
      work: failing,
    });
    h.queue.start();
    for (const key of ['a', 'b', 'c']) h.queue.add(key);
    await h.clock.advance(0);
    expect(h.events.map((e) => (e.outcome === 'retry' ? e.delayMs : NaN))).toEqual([
      10, 1000, 2000,
    ]);
  });

  it('stops retrying on a TerminalError and reports it, until the key is added again', async () => {
    const cause = new Error('spec.template is not a pod template');
    const logged: string[] = [];
    const h = harness({
      logger: { warn: () => undefined, error: (message) => logged.push(message) },
      work: () =>
        Promise.reject(new TerminalError('Deployment shop/web cannot be stamped', { cause })),
    });
    h.queue.start();
    h.queue.add('Deployment/shop/web');
    await h.clock.advance(3_600_000);
    expect(h.runs).toHaveLength(1);
    expect(h.events).toEqual([
      expect.objectContaining({ outcome: 'terminal', key: 'Deployment/shop/web' }),
    ]);
    const event = h.events[0];
    expect(event?.outcome === 'terminal' && event.error.cause).toBe(cause);
    expect(logged).toHaveLength(1);
    h.queue.add('Deployment/shop/web');
    await h.clock.advance(0);
    expect(h.runs).toHaveLength(2);
  });

  it('retries a reconcile that throws synchronously or returns a bad requeueAfterMs', async () => {
    const clock = new VirtualClock();
    const events: ReconcileEvent[] = [];
    const queue = new WorkQueue({
      scheduler: clock.scheduler,
      onReconcile: (event) => events.push(event),
      reconcile: (key) => {
        if (key === 'sync') throw new Error('thrown before any await');
        return Promise.resolve({ requeueAfterMs: NaN });
      },
    });
    queue.start();
    queue.add('sync');
    queue.add('nan');
    await clock.advance(0);
    expect(events.map((e) => e.outcome)).toEqual(['retry', 'retry']);
    const second = events[1];
    expect(second?.outcome === 'retry' && String(second.error)).toMatch(/requeueAfterMs NaN/);
  });

  it('reports each run with its outcome and virtual duration', async () => {
    const clock = new VirtualClock();
    const h = harness({ clock, work: () => clock.sleep(250).then(() => ({ done: true })) });
    h.queue.start();
    h.queue.add('Namespace/shop');
    await h.clock.advance(1000);
    expect(h.events).toEqual([{ key: 'Namespace/shop', outcome: 'done', durationMs: 250 }]);
  });
});
