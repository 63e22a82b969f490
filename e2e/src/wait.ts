// Polling with a deadline in the end-to-end suites: testkit's waitFor (the one way every
// workspace waits), with the longer defaults a real cluster needs: 30 s, a check every 250 ms.

import { waitFor as waitForIn, type Check, type WaitOptions } from '@outrigger/testkit';

export {
  describeState,
  done,
  failed,
  pending,
  WaitFailedError,
  WaitTimeoutError,
  type Check,
  type Observation,
  type WaitOptions,
} from '@outrigger/testkit';

export const DEFAULT_TIMEOUT_MS = 30_000;
export const DEFAULT_INTERVAL_MS = 250;

export function waitFor<T>(
  description: string,
  check: Check<T>,
  options: WaitOptions = {},
): Promise<T> {
  return waitForIn(description, check, {
    timeoutMs: DEFAULT_TIMEOUT_MS,
    intervalMs: DEFAULT_INTERVAL_MS,
    ...options,
  });
}
