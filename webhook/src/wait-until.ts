// Waiting at start-up for what the webhook cannot serve without (the API server, the
// configuration, the serving certificate), saying now and then what it waits for, and giving up
// at once when the process is told to stop.

import type { Logger } from './log';
import { Throttled } from './throttled';

const WAITING_LOG_MS = 10_000;

/** Thrown when a SIGTERM arrives before the webhook serves: not a failure. */
export class StartAborted extends Error {}

/**
 * Calls `attempt` until it succeeds, every `intervalMs`, saying at most every WAITING_LOG_MS
 * what it waits for and why. Stops (throws StartAborted) when `signal` aborts.
 */
export async function waitUntil<T>(options: {
  what: string;
  attempt: () => Promise<T | undefined>;
  logger: Logger;
  signal: AbortSignal;
  intervalMs?: number;
}): Promise<T> {
  const { what, attempt, logger, signal } = options;
  const waitingLog = new Throttled(WAITING_LOG_MS);
  for (;;) {
    if (signal.aborted) throw new StartAborted();
    let why = 'not there yet';
    try {
      const value = await attempt();
      if (value !== undefined) return value;
    } catch (err) {
      why = (err as Error).message;
    }
    waitingLog.run(() => logger.warn(`waiting for ${what}`, { why }));
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 1000));
  }
}
