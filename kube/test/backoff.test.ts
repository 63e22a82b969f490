// The back-off every retry uses (work queue keys, failed watches, refused owners).

import fc from 'fast-check';
import { backoffDelay } from '../src';

describe('backoffDelay', () => {
  it('stays within ±jitter of min(cap / (1 + jitter), base·2^(failures-1)), never above the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 2000 }),
        fc.double({ min: 0, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (failures, jitter, draw) => {
          const options = { baseMs: 100, capMs: 300_000, jitter, random: () => draw };
          const exponential = Math.min(300_000 / (1 + jitter), 100 * 2 ** (failures - 1));
          const delay = backoffDelay({ ...options, failures });
          expect(delay).toBeGreaterThanOrEqual(exponential * (1 - jitter) - 1e-6);
          expect(delay).toBeLessThanOrEqual(Math.min(300_000, exponential * (1 + jitter)) + 1e-6);
        },
      ),
    );
  });
});

it('keeps its whole spread at the cap: retries that keep failing do not meet at the cap', () => {
  const at = (draw: number) =>
    backoffDelay({ baseMs: 500, capMs: 30_000, jitter: 0.25, failures: 40, random: () => draw });
  expect(at(0)).toBeCloseTo(18_000);
  expect(at(0.5)).toBeCloseTo(24_000);
  expect(at(0.999999)).toBeLessThanOrEqual(30_000);
  expect(new Set([0.1, 0.3, 0.5, 0.7, 0.9].map(at)).size).toBe(5);
});
