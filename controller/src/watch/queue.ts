// The controller's work queue: handlers add keys, and each key is reconciled by one worker at a
// time, with client-go's workqueue semantics (merged duplicates, dirty/processing sets, retries).

import {
  asyncScheduler,
  defer,
  lastValueFrom,
  mergeMap,
  Subject,
  Subscription,
  timer,
  type SchedulerLike,
} from 'rxjs';
import { backoffDelay, type BackoffOptions } from '@outrigger/kube';

/**
 * What a reconcile returns: the key is settled, or it must be looked at again after a delay
 * (a rollout to follow, a certificate to renew). Failures are thrown, not returned.
 */
export type Result = { done: true } | { requeueAfterMs: number };

/**
 * Thrown by a reconcile when retrying cannot help (the object is invalid, the user must act).
 * The queue stops retrying the key until something adds it again, and reports the error.
 */
export class TerminalError extends Error {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.name = 'TerminalError';
  }
}

/** The slice of a logger the queue uses. */
export interface QueueLogger {
  warn(message: string, meta: Record<string, unknown>): unknown;
  error(message: string, meta: Record<string, unknown>): unknown;
}

/** One finished reconcile, for metrics and logs. */
export type ReconcileEvent = { key: string; durationMs: number } & (
  | { outcome: 'done' }
  | { outcome: 'requeue'; delayMs: number }
  | { outcome: 'retry'; delayMs: number; failures: number; error: unknown }
  | { outcome: 'terminal'; error: TerminalError }
);

export type ReconcileOutcome = ReconcileEvent['outcome'];

export interface RateOptions {
  ratePerSecond: number;
  burst: number;
}

export interface WorkQueueOptions {
  reconcile: (key: string) => Promise<Result>;
  /** Keys reconciled at once. */
  concurrency?: number;
  /** Per-key exponential back-off for failed reconciles. */
  backoff?: Partial<BackoffOptions>;
  /**
   * Global bucket for retries, so a mass failure (the API server gone) does not come back as a
   * thundering herd: a retry waits for the larger of its key's back-off and a token.
   */
  retryLimit?: RateOptions;
  /** Clock and timers; tests pass a virtual-time scheduler. */
  scheduler?: SchedulerLike;
  /** Source of jitter, in [0, 1). */
  random?: () => number;
  logger?: QueueLogger;
  onReconcile?: (event: ReconcileEvent) => void;
  onDepth?: (depth: number) => void;
  /** Reconciles running now: with a depth of 0 too, the queue has nothing left to do. */
  onRunning?: (running: number) => void;
  /** The queue stopped on an error of its own (a defect): whoever runs it must not go on as if it ran. */
  onBroken?: (error: unknown) => void;
}

/**
 * The retry bucket is client-go's default (10 a second, burst 100); the back-off starts above
 * client-go's 5 ms and stops at 5 minutes rather than 16, as every reconcile reads caches and
 * may write: a failing key costs little and still comes back within minutes of a fix.
 */
export const QUEUE_DEFAULTS = {
  concurrency: 4,
  backoff: { baseMs: 100, capMs: 5 * 60_000, jitter: 0.2 },
  retryLimit: { ratePerSecond: 10, burst: 100 },
} as const satisfies {
  concurrency: number;
  backoff: BackoffOptions;
  retryLimit: RateOptions;
};

/**
 * Token accounting in the style of golang.org/x/time/rate's Reserve: a token is always granted,
 * possibly in the future, so callers are served in the order they asked and none starves.
 * Over any window of W seconds at most `burst + ratePerSecond * W` tokens become usable.
 */
export class TokenBucket {
  protected readonly scheduler: SchedulerLike;
  private readonly perMs: number;
  private readonly burst: number;
  /** Tokens at time `last`; negative when tokens are promised to waiting callers. */
  private tokens: number;
  private last: number;

  constructor(options: RateOptions & { scheduler?: SchedulerLike }) {
    const { ratePerSecond, burst } = options;
    if (!(ratePerSecond > 0 && Number.isFinite(ratePerSecond))) {
      throw new RangeError(`ratePerSecond is ${ratePerSecond}; give a finite number above 0`);
    }
    if (!(Number.isInteger(burst) && burst >= 1)) {
      throw new RangeError(`burst is ${burst}; give a whole number of at least 1`);
    }
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.perMs = ratePerSecond / 1000;
    this.burst = burst;
    this.tokens = burst;
    this.last = this.scheduler.now();
  }

  /** Takes one token and returns the milliseconds until it may be used (0: now). */
  reserve(): number {
    const now = Math.max(this.last, this.scheduler.now());
    this.tokens = Math.min(this.burst, this.tokens + (now - this.last) * this.perMs);
    this.last = now;
    this.tokens -= 1;
    // Rounded up (less a rounding error's worth) so a timer never fires before its token exists.
    return this.tokens >= 0 ? 0 : Math.ceil(-this.tokens / this.perMs - 1e-9);
  }
}

/**
 * The controller's one global limit on API writes: reconcilers `await limiter.acquire()` before
 * each create, patch or delete, so a wave over thousands of owners cannot flood the API server.
 */
export class WriteLimiter extends TokenBucket {
  async acquire(): Promise<void> {
    const waitMs = this.reserve();
    if (waitMs > 0) await lastValueFrom(timer(waitMs, this.scheduler));
  }
}

type Attempt = { result: Result } | { error: unknown };

/** Throws on a result the queue could only misread, so it is retried and logged, not lost. */
function checkResult(result: Result): void {
  if (!('requeueAfterMs' in result)) return;
  const ms = result.requeueAfterMs;
  if (!(Number.isFinite(ms) && ms >= 0)) {
    throw new Error(`reconcile returned requeueAfterMs ${ms}; return a finite number >= 0`);
  }
}

function checkConcurrency(concurrency: number): number {
  if (!(Number.isInteger(concurrency) && concurrency >= 1)) {
    throw new RangeError(`concurrency is ${concurrency}; give a whole number of at least 1`);
  }
  return concurrency;
}

function checkBackoff(backoff: BackoffOptions): BackoffOptions {
  const { baseMs, capMs, jitter } = backoff;
  if (!(baseMs > 0 && capMs >= baseMs && jitter >= 0 && jitter < 1)) {
    throw new RangeError(
      `back-off ${JSON.stringify(backoff)} is invalid; want baseMs > 0, capMs >= baseMs, 0 <= jitter < 1`,
    );
  }
  return backoff;
}

const silent: QueueLogger = { warn: () => undefined, error: () => undefined };

/**
 * A key is in at most one of `queued` and `processing`; `again` holds keys added while they were
 * processing (client-go's dirty set minus the queue), queued once more after their run ends.
 * Waiting keys live in mergeMap's buffer, which also bounds the number of reconciles at once.
 * Whatever the queue adds back by itself (a run again, a requeue, a retry) waits for a timer,
 * so the event loop turns between two runs of one key.
 */
export class WorkQueue {
  private readonly reconcile: (key: string) => Promise<Result>;
  private readonly concurrency: number;
  private readonly backoff: BackoffOptions;
  private readonly retryBucket: TokenBucket;
  private readonly scheduler: SchedulerLike;
  /** Times reconciles: the scheduler's clock in tests, else a sub-millisecond one. */
  private readonly elapsed: () => number;
  private readonly random: () => number;
  private readonly logger: QueueLogger;
  private readonly onReconcile: (event: ReconcileEvent) => void;
  private readonly onDepth: (depth: number) => void;
  private readonly onRunning: (running: number) => void;
  private readonly onBroken: (error: unknown) => void;

  private readonly ready = new Subject<string>();
  private readonly queued = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly again = new Set<string>();
  private readonly delayed = new Map<string, { due: number; timer: Subscription }>();
  private readonly failures = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private pipeline = Subscription.EMPTY;
  private state: 'new' | 'running' | 'stopped' = 'new';
  private lastDepth = 0;
  private lastRunning = 0;

  constructor(options: WorkQueueOptions) {
    this.reconcile = options.reconcile;
    this.concurrency = checkConcurrency(options.concurrency ?? QUEUE_DEFAULTS.concurrency);
    this.backoff = checkBackoff({ ...QUEUE_DEFAULTS.backoff, ...options.backoff });
    this.scheduler = options.scheduler ?? asyncScheduler;
    this.retryBucket = new TokenBucket({
      ...(options.retryLimit ?? QUEUE_DEFAULTS.retryLimit),
      scheduler: this.scheduler,
    });
    this.random = options.random ?? Math.random;
    const scheduler = options.scheduler;
    this.elapsed = scheduler ? () => scheduler.now() : () => performance.now();
    this.logger = options.logger ?? silent;
    this.onReconcile = options.onReconcile ?? (() => undefined);
    this.onDepth = options.onDepth ?? (() => undefined);
    this.onRunning = options.onRunning ?? (() => undefined);
    this.onBroken = options.onBroken ?? (() => undefined);
  }

  /**
   * Entries waiting: queued keys, keys to run again after their current run, and delayed adds.
   * A key both queued and delayed counts twice, as it will be reconciled twice.
   */
  get depth(): number {
    return this.queued.size + this.again.size + this.delayed.size;
  }

  /** Asks for `key` to be reconciled; merged with a run of the same key that has not started. */
  add(key: string): void {
    if (this.state === 'stopped' || this.queued.has(key)) return;
    if (this.processing.has(key)) {
      // Never two runs of one key at once: this one starts when the current run ends.
      this.again.add(key);
      this.countsChanged();
      return;
    }
    this.queued.add(key);
    this.countsChanged();
    if (this.state === 'running') this.ready.next(key);
  }

  /**
   * Adds `key` after `delayMs`. A key waits for at most one delayed add: the earlier one is kept,
   * as the reconcile it triggers will ask for a later one again if it still needs it. A delay of
   * 0 (or less) still goes through a timer: the key comes back on a later turn of the event
   * loop, never within the promise callbacks of the run that asked, so a reconcile that keeps
   * asking to run again cannot starve timers and I/O (probes, Lease renewals, watches).
   */
  addAfter(key: string, delayMs: number): void {
    if (this.state === 'stopped') return;
    const wait = delayMs > 0 ? delayMs : 0;
    const due = this.scheduler.now() + wait;
    const pending = this.delayed.get(key);
    if (pending && pending.due <= due) return;
    pending?.timer.unsubscribe();
    const entry = { due, timer: Subscription.EMPTY };
    this.delayed.set(key, entry);
    // rxjs's asyncScheduler sets a timer even for 0 ms (its asapScheduler would not).
    entry.timer = timer(wait, this.scheduler).subscribe(() => {
      if (this.delayed.get(key) === entry) this.delayed.delete(key);
      this.add(key);
    });
    this.countsChanged();
  }

  /** Starts the workers; keys added before are reconciled in the order they came. */
  start(): void {
    if (this.state === 'running') return;
    if (this.state === 'stopped') {
      throw new Error('this WorkQueue was stopped and cannot restart; create a new WorkQueue');
    }
    this.state = 'running';
    this.pipeline = this.ready
      .pipe(mergeMap((key) => defer(() => this.track(this.process(key))), this.concurrency))
      .subscribe({
        // process() never rejects; should that change, a queue that stops must not stop quietly.
        error: (error: unknown) => {
          this.logger.error('work queue stopped on an error', { error });
          this.safely('onBroken', () => this.onBroken(error));
        },
      });
    for (const key of [...this.queued]) this.ready.next(key);
  }

  /** Drops waiting and delayed keys, then resolves once the reconciles in flight have ended. */
  async stop(): Promise<void> {
    if (this.state !== 'stopped') {
      this.state = 'stopped';
      this.pipeline.unsubscribe();
      for (const { timer: pending } of this.delayed.values()) pending.unsubscribe();
      this.delayed.clear();
      this.queued.clear();
      this.again.clear();
      this.countsChanged();
    }
    await Promise.all([...this.inFlight]);
  }

  private track(run: Promise<void>): Promise<void> {
    this.inFlight.add(run);
    return run.finally(() => this.inFlight.delete(run));
  }

  /** One run of one key; never rejects, every failure becomes an outcome. */
  private async process(key: string): Promise<void> {
    this.queued.delete(key);
    this.processing.add(key);
    this.countsChanged();
    const started = this.elapsed();
    const attempt = await this.attempt(key);
    this.processing.delete(key);
    const event = this.finish(key, attempt, this.elapsed() - started);
    // Added while it ran: it runs again, after the event loop has turned (see addAfter).
    if (this.again.delete(key)) this.addAfter(key, 0);
    this.countsChanged();
    this.safely('onReconcile', () => this.onReconcile(event));
  }

  private async attempt(key: string): Promise<Attempt> {
    try {
      const result = await this.reconcile(key);
      checkResult(result);
      return { result };
    } catch (error) {
      return { error };
    }
  }

  /** Turns an attempt into its outcome and acts on it: forget, requeue, retry or report. */
  private finish(key: string, attempt: Attempt, durationMs: number): ReconcileEvent {
    if ('result' in attempt) {
      this.failures.delete(key);
      if (!('requeueAfterMs' in attempt.result)) return { key, durationMs, outcome: 'done' };
      const delayMs = attempt.result.requeueAfterMs;
      this.addAfter(key, delayMs);
      return { key, durationMs, outcome: 'requeue', delayMs };
    }
    const { error } = attempt;
    if (error instanceof TerminalError) {
      this.failures.delete(key);
      this.logger.error('reconcile failed for good; not retrying until the key is added again', {
        key,
        error,
      });
      return { key, durationMs, outcome: 'terminal', error };
    }
    const failures = (this.failures.get(key) ?? 0) + 1;
    this.failures.set(key, failures);
    const backoff = backoffDelay({ ...this.backoff, failures, random: this.random });
    const delayMs = Math.max(backoff, this.retryBucket.reserve());
    this.addAfter(key, delayMs);
    this.logger.warn('reconcile failed; retrying', { key, failures, delayMs, error });
    return { key, durationMs, outcome: 'retry', delayMs, failures, error };
  }

  /** Reports the depth and the reconciles running, each when it changed. */
  private countsChanged(): void {
    const depth = this.depth;
    if (depth !== this.lastDepth) {
      this.lastDepth = depth;
      this.safely('onDepth', () => this.onDepth(depth));
    }
    const running = this.processing.size;
    if (running !== this.lastRunning) {
      this.lastRunning = running;
      this.safely('onRunning', () => this.onRunning(running));
    }
  }

  /** A broken metrics hook must not take the queue down with it. */
  private safely(hook: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.logger.error(`work queue ${hook} hook threw`, { error });
    }
  }
}
