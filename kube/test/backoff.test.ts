// The back-off every retry uses (work queue keys, failed watches, refused owners).

import fc from 'fast-check';
import { backoffDelay } from '../src';

describe('backoffDelay', () => {
  it('stays within ±jitter of min(cap, base·2^(failures-1)) and never above the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, jitter, draw) => {
          const options = { baseMs: 100, capMs: 300_000, jitter, random: () => draw };
          const exponential = Math.min(300_000, 100 * 2 ** (failures - 1));
          const delay = backoffDelay({ ...options, failures });
          expect(delay).toBeGreaterThanOrEqual(exponential * (1 - jitter) - 1e-6);
          expect(delay).toBeLessThanOrEqual(Math.min(300_000, exponential * (1 + jitter)) + 1e-6);
        },
      ),
    );
  });
});
