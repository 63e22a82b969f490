// The work queue's promises: merged keys, one run per key at a time, back-off, bounds, stop,
// and the write limiter. All in virtual time: no test waits for a real clock.

import fc from 'fast-check';
import { firstValueFrom, timer, VirtualTimeScheduler } from 'rxjs';
import {
  QUEUE_DEFAULTS,
  TerminalError,
  TokenBucket,
  WorkQueue,
  WriteLimiter,
  type ReconcileEvent,
  type Result,
  type WorkQueueOptions,
} from '../src/queue';

/** Lets every pending promise callback run (one macrotask turn drains the microtask queue). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Virtual time on rxjs's VirtualTimeScheduler, advanced one due timer at a time with the promise
 * callbacks in between, so a reconcile that finishes can schedule timers inside the same advance.
 */
class VirtualClock {
  readonly scheduler = new VirtualTimeScheduler();

  now(): number {
    return this.scheduler.now();
  }

  async advance(ms: number): Promise<void> {
    const target = this.scheduler.frame + ms;
    await settle();
    for (
      let next = this.scheduler.actions[0];
      next && next.delay <= target;
      next = this.scheduler.actions[0]
    ) {
      this.scheduler.maxFrames = next.delay;
      this.scheduler.flush();
      await settle();
    }
    this.scheduler.maxFrames = Infinity;
    this.scheduler.frame = target;
    await settle();
  }

  sleep(ms: number): Promise<void> {
    return firstValueFrom(timer(ms, this.scheduler)).then(() => undefined);
  }
}

/** A promise the test resolves when it wants a reconcile to end. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

interface Run {
  key: string;
  start: number;
  end?: number;
}

/**
 * A queue over a recording reconcile: every run's start and end in virtual time, the keys
 * running at the moment, the most ever running at once, and any key seen running twice.
 */
function harness(
  options: Partial<WorkQueueOptions> & {
    work?: (key: string, run: number) => Promise<Result>;
    clock?: VirtualClock;
  } = {},
) {
  const { work: given, clock = new VirtualClock(), ...queueOptions } = options;
  const runs: Run[] = [];
  const events: ReconcileEvent[] = [];
  const active = new Set<string>();
  const overlaps: string[] = [];
  let maxActive = 0;
  const work = given ?? (() => Promise.resolve<Result>({ done: true }));
  const queue = new WorkQueue({
    scheduler: clock.scheduler,
    random: () => 0.5,
    onReconcile: (event) => events.push(event),
    ...queueOptions,
    reconcile: async (key) => {
      if (active.has(key)) overlaps.push(key);
      active.add(key);
      maxActive = Math.max(maxActive, active.size);
      const run: Run = { key, start: clock.now() };
      runs.push(run);
      try {
        return await work(key, runs.filter((r) => r.key === key).length);
      } finally {
        run.end = clock.now();
        active.delete(key);
      }
    },
  });
  return {
    clock,
    queue,
    runs,
    events,
    overlaps,
    maxActive: () => maxActive,
    keys: () => runs.map((r) => r.key),
    startsOf: (key: string) => runs.filter((r) => r.key === key).map((r) => r.start),
  };
}

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

describe('WorkQueue: depth, hooks and lifecycle', () => {
  it('reports every change of depth, counting delayed keys', async () => {
    const depths: number[] = [];
    const h = harness({ onDepth: (d) => depths.push(d) });
    h.queue.add('a');
    h.queue.add('b');
    h.queue.addAfter('c', 500);
    expect(h.queue.depth).toBe(3);
    h.queue.start();
    await h.clock.advance(1000);
    // c moves from delayed to queued at 500 ms without changing the depth, then starts.
    expect(depths).toEqual([1, 2, 3, 2, 1, 0]);
    expect(h.queue.depth).toBe(0);
  });

  it('reports the reconciles running, so depth 0 and none running means idle', async () => {
    const running: number[] = [];
    const clock = new VirtualClock();
    const h = harness({
      clock,
      onRunning: (n) => running.push(n),
      work: () => clock.sleep(100).then(() => ({ done: true })),
    });
    h.queue.add('a');
    h.queue.add('b');
    h.queue.start();
    await h.clock.advance(50);
    // Both run (the default concurrency is above 2), and neither counts in the depth.
    expect(h.queue.depth).toBe(0);
    expect(running).toEqual([1, 2]);
    await h.clock.advance(100);
    expect(running).toEqual([1, 2, 1, 0]);
  });

  it('keeps working when a metrics hook throws', async () => {
    const errors: string[] = [];
    const h = harness({
      onReconcile: () => {
        throw new Error('metric registry closed');
      },
      onDepth: () => {
        throw new Error('metric registry closed');
      },
      logger: { warn: () => undefined, error: (message) => errors.push(message) },
    });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(0);
    h.queue.add('b');
    await h.clock.advance(0);
    expect(h.keys()).toEqual(['a', 'b']);
    expect(errors).toContain('work queue onReconcile hook threw');
  });

  it('stop() waits for the runs in flight and drops waiting and delayed keys', async () => {
    const inFlight = gate();
    const h = harness({
      concurrency: 1,
      work: (key) =>
        key === 'a'
          ? inFlight.promise.then(() => ({ done: true }))
          : Promise.resolve({ done: true }),
    });
    h.queue.start();
    h.queue.add('a');
    h.queue.add('b');
    h.queue.addAfter('c', 100);
    await h.clock.advance(0);
    h.queue.add('a'); // to run again after this run: dropped too
    let stopped = false;
    const stopping = h.queue.stop().then(() => (stopped = true));
    expect(h.queue.depth).toBe(0);
    await h.clock.advance(1000);
    expect(stopped).toBe(false);
    inFlight.open();
    await stopping;
    await h.clock.advance(1000);
    h.queue.add('d');
    await h.clock.advance(1000);
    expect(h.keys()).toEqual(['a']);
    expect(h.events).toEqual([expect.objectContaining({ key: 'a', outcome: 'done' })]);
    expect(() => h.queue.start()).toThrow(/create a new WorkQueue/);
  });

  it('does not retry a run that failed while stopping', async () => {
    const inFlight = gate();
    const h = harness({ work: () => inFlight.promise.then(() => Promise.reject(new Error('x'))) });
    h.queue.start();
    h.queue.add('a');
    await h.clock.advance(0);
    const stopping = h.queue.stop();
    inFlight.open();
    await stopping;
    await h.clock.advance(60_000);
    expect(h.runs).toHaveLength(1);
    expect(h.queue.depth).toBe(0);
  });

  it('rejects options that cannot work, saying what to give', () => {
    const reconcile = () => Promise.resolve<Result>({ done: true });
    expect(() => new WorkQueue({ reconcile, concurrency: 0 })).toThrow(/concurrency is 0/);
    expect(() => new WorkQueue({ reconcile, backoff: { baseMs: 100, capMs: 50 } })).toThrow(
      /capMs >= baseMs/,
    );
    expect(() => new WriteLimiter({ ratePerSecond: 0, burst: 1 })).toThrow(/ratePerSecond is 0/);
    expect(() => new WriteLimiter({ ratePerSecond: 1, burst: 0.5 })).toThrow(/burst is 0.5/);
  });

  it('runs on the default scheduler and clock too', async () => {
    const seen: string[] = [];
    const queue = new WorkQueue({
      reconcile: (key) => {
        seen.push(key);
        return Promise.resolve({ done: true });
      },
    });
    queue.start();
    queue.add('a');
    queue.addAfter('b', 1);
    while (seen.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    await queue.stop();
    expect(seen).toEqual(['a', 'b']);
    expect(QUEUE_DEFAULTS.concurrency).toBe(4);
  });
});

/** The largest number of grants inside any closed window of `windowMs`. */
function busiestWindow(grants: number[], windowMs: number): number {
  const sorted = [...grants].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] ?? 0) - (sorted[j] ?? 0) > windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('TokenBucket and WriteLimiter', () => {
  it('never grants more than burst + rate × window, for any arrivals', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 200 }),
        (ratePerSecond, burst, arrivals) => {
          const clock = new VirtualClock();
          const bucket = new TokenBucket({ ratePerSecond, burst, scheduler: clock.scheduler });
          const grants: number[] = [];
          for (const at of [...arrivals].sort((a, b) => a - b)) {
            clock.scheduler.frame = at;
            grants.push(at + bucket.reserve());
          }
          for (const windowMs of [0, 1, 100, 999, 1000, 3000, 10_000]) {
            const allowed = Math.floor(burst + (ratePerSecond * windowMs) / 1000 + 1e-9);
            expect(busiestWindow(grants, windowMs)).toBeLessThanOrEqual(allowed);
          }
        },
      ),
    );
  });

  it('lets acquire() through at the rate after the burst, in the order asked', async () => {
    const clock = new VirtualClock();
    const limiter = new WriteLimiter({ ratePerSecond: 5, burst: 3, scheduler: clock.scheduler });
    const grants: { i: number; at: number }[] = [];
    const all = Array.from({ length: 23 }, (_, i) =>
      limiter.acquire().then(() => grants.push({ i, at: clock.now() })),
    );
    await clock.advance(0);
    expect(grants.map((g) => g.at)).toEqual([0, 0, 0]);
    await clock.advance(4000);
    await Promise.all(all);
    expect(grants.map((g) => g.i)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    // Three at once, then one every 200 ms: the twentieth after the burst at 4 s.
    expect(grants.at(-1)?.at).toBe(4000);
    for (const windowMs of [0, 200, 999, 1000, 2000]) {
      expect(
        busiestWindow(
          grants.map((g) => g.at),
          windowMs,
        ),
      ).toBeLessThanOrEqual(Math.floor(3 + (5 * windowMs) / 1000));
    }
  });

  it('refills to the burst after a quiet spell, never beyond it', async () => {
    const clock = new VirtualClock();
    const limiter = new WriteLimiter({ ratePerSecond: 2, burst: 2, scheduler: clock.scheduler });
    await clock.advance(60_000);
    const grants: number[] = [];
    for (let i = 0; i < 4; i++) void limiter.acquire().then(() => grants.push(clock.now()));
    await clock.advance(2000);
    expect(grants).toEqual([60_000, 60_000, 60_500, 61_000]);
  });
});

describe('WorkQueue: a defect of its own', () => {
  it('tells its owner when it stops on an error, rather than stopping quietly', async () => {
    // A clock that breaks once the queue runs: process() rejects, which nothing else can make it.
    let armed = false;
    const scheduler = new VirtualTimeScheduler();
    const now = scheduler.now.bind(scheduler);
    scheduler.now = () => {
      if (armed) throw new Error('the clock broke');
      return now();
    };
    let broken: unknown;
    const queue = new WorkQueue({
      reconcile: () => Promise.resolve({ done: true }),
      scheduler,
      onBroken: (error) => (broken = error),
    });
    queue.start();
    armed = true;
    queue.add('Namespace/shop');
    for (let i = 0; i < 10 && broken === undefined; i++) await firstValueFrom(timer(1));
    expect(String(broken)).toMatch(/the clock broke/);
    armed = false;
    await queue.stop();
  });
});
