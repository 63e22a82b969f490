// Waiting in a test or a benchmark for something to happen, the one way every workspace does
// it: waitFor() retries a check until it is done, and on timeout throws an error that names what
// it waited for, what it saw last and when it gave up. A check answers done(value), pending(state)
// or failed(reason), or simply true (done) or false (not yet). An error a check throws counts as
// not yet (an API server may be briefly unavailable) and is shown if time runs out.

import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitOptions {
  /**
   * Give up after this long (default 4 s: under jest's default test timeout of 5 s, so the
   * error that says what was awaited is the one reported; the end-to-end suites wait 30 s).
   */
  timeoutMs?: number;
  /** Pause between checks (default 10 ms; 250 ms in the end-to-end suites). */
  intervalMs?: number;
}

/** What one check saw: done (with a value), not yet (with the state seen), or failed for good. */
export type Observation<T> =
  | { outcome: 'done'; value: T }
  | { outcome: 'pending'; state: unknown }
  | { outcome: 'failed'; reason: string };

export const done = <T>(value: T): Observation<T> => ({ outcome: 'done', value });
/** Not there yet; `state` (a string or any JSON-able value) is shown if the wait times out. */
export const pending = (state: unknown): Observation<never> => ({ outcome: 'pending', state });
/** Stop waiting now: the condition can no longer become true. */
export const failed = (reason: string): Observation<never> => ({ outcome: 'failed', reason });

/** What a check answers: an observation, or true (done) and false (not yet). */
type Answer<T> = Observation<T> | boolean;
export type Check<T> = () => Answer<T> | Promise<Answer<T>>;

export const DEFAULT_TIMEOUT_MS = 4_000;
export const DEFAULT_INTERVAL_MS = 10;
const MAX_STATE_CHARS = 4_000;
const MIN_CHECK_BUDGET_MS = 1_000;

export class WaitTimeoutError extends Error {
  constructor(
    readonly description: string,
    readonly lastState: unknown,
    readonly deadline: Date,
    readonly checks: number,
  ) {
    super(
      `timed out waiting for ${description}: not done by the deadline ` +
        `${deadline.toISOString()} (${checks} checks). Last observed: ${describeState(lastState)}`,
    );
    this.name = 'WaitTimeoutError';
  }
}

export class WaitFailedError extends Error {
  constructor(
    readonly description: string,
    readonly reason: string,
  ) {
    super(`gave up waiting for ${description}: ${reason}`);
    this.name = 'WaitFailedError';
  }
}

/** A readable, bounded rendering of an observed state for error messages. */
export function describeState(state: unknown): string {
  let text: string;
  if (typeof state === 'string') text = state;
  else if (state instanceof Error) text = `${state.name}: ${state.message}`;
  else {
    try {
      text = JSON.stringify(state) ?? String(state);
    } catch {
      text = String(state);
    }
  }
  return text.length > MAX_STATE_CHARS ? `${text.slice(0, MAX_STATE_CHARS)}... (truncated)` : text;
}

/** A boolean answer as an observation: true is done (with no value), false not yet. */
const asObservation = <T>(answer: boolean): Observation<T> =>
  answer ? { outcome: 'done', value: undefined as T } : pending('not yet');

/** Runs one check; an error counts as not done, a check still running at the deadline as undefined. */
async function observe<T>(
  check: Check<T>,
  remainingMs: number,
): Promise<Observation<T> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), Math.max(remainingMs, 0));
  });
  const attempt = Promise.resolve()
    .then(check)
    .then((answer) => (typeof answer === 'boolean' ? asObservation<T>(answer) : answer))
    .catch((error: unknown) => pending(error instanceof Error ? error : String(error)));
  try {
    return await Promise.race([attempt, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Calls `check` until it returns done(value), then resolves with the value. Errors thrown by the
 * check are retried (the API server may be briefly unavailable) and reported if time runs out.
 * Throws WaitTimeoutError after `timeoutMs`, WaitFailedError as soon as the check says failed().
 */
export async function waitFor<T>(
  description: string,
  check: Check<T>,
  options: WaitOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
  const deadline = Date.now() + timeoutMs;
  let lastState: unknown = 'nothing: no check finished';
  for (let checks = 1; ; checks++) {
    // A check that starts just before the deadline still gets a fair chance to finish.
    const budget = Math.max(deadline - Date.now(), Math.min(MIN_CHECK_BUDGET_MS, timeoutMs));
    const observation = await observe(check, budget);
    if (observation?.outcome === 'done') return observation.value;
    if (observation?.outcome === 'failed') {
      throw new WaitFailedError(description, observation.reason);
    }
    lastState = observation
      ? observation.state
      : `${describeState(lastState)} (then a check was still running at the deadline)`;
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new WaitTimeoutError(description, lastState, new Date(deadline), checks);
    }
    await sleep(Math.min(intervalMs, remaining));
  }
}
