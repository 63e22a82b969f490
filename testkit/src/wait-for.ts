// Waiting in a test for something to happen: waitFor() checks a condition until it holds or a
// deadline passes, and then throws an error that names what it waited for.

export interface WaitForOptions {
  /**
   * Give up after this long (default 4 s: under jest's default test timeout of 5 s, so the
   * error that says what was awaited is the one reported).
   */
  timeoutMs?: number;
  /** Pause between two checks (default 10 ms). */
  intervalMs?: number;
}

export const WAIT_FOR_DEFAULTS = { timeoutMs: 4_000, intervalMs: 10 } as const;

/** The error of a wait whose condition did not hold by its deadline. */
export class WaitForTimeoutError extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    readonly checks: number,
  ) {
    super(`timed out after ${timeoutMs} ms waiting for ${what} (checked ${checks} times)`);
    this.name = 'WaitForTimeoutError';
  }
}

/**
 * Resolves once `condition` returns true, checking it at once and then every `intervalMs`.
 * Throws WaitForTimeoutError when it still does not hold after `timeoutMs`; an error the
 * condition throws ends the wait with that error (a broken check is not "not yet").
 */
export async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  options: WaitForOptions = {},
): Promise<void> {
  const { timeoutMs, intervalMs } = { ...WAIT_FOR_DEFAULTS, ...options };
  const deadline = Date.now() + timeoutMs;
  for (let checks = 1; ; checks++) {
    if (await condition()) return;
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new WaitForTimeoutError(what, timeoutMs, checks);
    await new Promise((resolve) => setTimeout(resolve, Math.min(intervalMs, remaining)));
  }
}
