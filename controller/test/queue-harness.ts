// The work queue's test harness: a queue on virtual time, and a gate a test opens.

import { firstValueFrom, timer, VirtualTimeScheduler } from 'rxjs';
import {
  WorkQueue,
  type ReconcileEvent,
  type Result,
  type WorkQueueOptions,
} from '../src/watch/queue';

/** Lets every pending promise callback run (one macrotask turn drains the microtask queue). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Virtual time on rxjs's VirtualTimeScheduler, advanced one due timer at a time with the promise
 * callbacks in between, so a reconcile that finishes can schedule timers inside the same advance.
 */
export class VirtualClock {
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
export function gate(): { promise: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export interface Run {
  key: string;
  start: number;
  end?: number;
}

/**
 * A queue over a recording reconcile: every run's start and end in virtual time, the keys
 * running at the moment, the most ever running at once, and any key seen running twice.
 */
export function harness(
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
