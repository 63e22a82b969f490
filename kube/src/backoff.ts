// Exponential back-off with jitter, the one formula for every retry: the work queue's keys, a
// watch that failed, an owner whose patch the API server refused.

export interface BackoffOptions {
  /** Delay before the first retry. */
  baseMs: number;
  /** Longest delay, jitter included: the back-off doubles up to capMs / (1 + jitter). */
  capMs: number;
  /** Spread as a fraction: 0.2 draws each delay from ±20% around the exponential value. */
  jitter: number;
}

/**
 * The wait before retry number `failures` (1 for the first): `baseMs` doubling per failure,
 * spread by jitter so keys that failed together do not retry together, never above `capMs`.
 * The doubling stops at `capMs / (1 + jitter)`, so the spread stays whole at the cap instead of
 * piling up on it: retries that failed together stay apart however long they fail.
 */
export function backoffDelay(
  options: BackoffOptions & { failures: number; random: () => number },
): number {
  const { baseMs, capMs, jitter, failures, random } = options;
  // 2 ** 1100 is Infinity, which Math.min turns into the top: no overflow to guard.
  const exponential = Math.min(capMs / (1 + jitter), baseMs * 2 ** Math.max(0, failures - 1));
  const spread = exponential * (1 + jitter * (2 * random() - 1));
  return Math.min(capMs, Math.max(0, spread));
}
