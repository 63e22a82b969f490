// The work queue's depth, its hooks, its start and stop, and a defect of its own: in virtual time.

import { firstValueFrom, timer, VirtualTimeScheduler } from 'rxjs';
import { waitFor } from '@outrigger/testkit';
import { QUEUE_DEFAULTS, WorkQueue, WriteLimiter, type Result } from '../src/watch/queue';
import { VirtualClock, gate, harness } from './queue-harness';

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
    await waitFor('both keys to run', () => seen.length >= 2);
    await queue.stop();
    expect(seen).toEqual(['a', 'b']);
    expect(QUEUE_DEFAULTS.concurrency).toBe(4);
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
