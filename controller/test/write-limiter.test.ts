// The write limiter's promises: never more than burst + rate × window, for any arrivals.

import fc from 'fast-check';
import { TokenBucket, WriteLimiter } from '../src/watch/queue';

import { VirtualClock } from './queue-harness';

/** The largest number of grants inside any closed window of `windowMs`. */
function busiestWindow(grants: number[], windowMs: number): number {
  const sorted = [...grants].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] ?? 0) - (sorted[j] ?? 0) > windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('TokenBucket and WriteLimiter', () => {
  it('never grants more than burst + rate × window, for any arrivals', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0.5, max: 50, noNaN: true }),
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.integer({ min: 0, max: 5000 }), { minLength: 1, maxLength: 200 }),
        (ratePerSecond, burst, arrivals) => {
          const clock = new VirtualClock();
          const bucket = new TokenBucket({ ratePerSecond, burst, scheduler: clock.scheduler });
          const grants: number[] = [];
          for (const at of [...arrivals].sort((a, b) => a - b)) {
            clock.scheduler.frame = at;
            grants.push(at + bucket.reserve());
          }
          for (const windowMs of [0, 1, 100, 999, 1000, 3000, 10_000]) {
            const allowed = Math.floor(burst + (ratePerSecond * windowMs) / 1000 + 1e-9);
            expect(busiestWindow(grants, windowMs)).toBeLessThanOrEqual(allowed);
          }
        },
      ),
    );
  });

  it('lets acquire() through at the rate after the burst, in the order asked', async () => {
    const clock = new VirtualClock();
    const limiter = new WriteLimiter({ ratePerSecond: 5, burst: 3, scheduler: clock.scheduler });
    const grants: { i: number; at: number }[] = [];
    const all = Array.from({ length: 23 }, (_, i) =>
      limiter.acquire().then(() => grants.push({ i, at: clock.now() })),
    );
    await clock.advance(0);
    expect(grants.map((g) => g.at)).toEqual([0, 0, 0]);
    await clock.advance(4000);
    await Promise.all(all);
    expect(grants.map((g) => g.i)).toEqual(Array.from({ length: 23 }, (_, i) => i));
    // Three at once, then one every 200 ms: the twentieth after the burst at 4 s.
    expect(grants.at(-1)?.at).toBe(4000);
    for (const windowMs of [0, 200, 999, 1000, 2000]) {
      expect(
        busiestWindow(
          grants.map((g) => g.at),
          windowMs,
        ),
      ).toBeLessThanOrEqual(Math.floor(3 + (5 * windowMs) / 1000));
    }
  });

  it('refills to the burst after a quiet spell, never beyond it', async () => {
    const clock = new VirtualClock();
    const limiter = new WriteLimiter({ ratePerSecond: 2, burst: 2, scheduler: clock.scheduler });
    await clock.advance(60_000);
    const grants: number[] = [];
    for (let i = 0; i < 4; i++) void limiter.acquire().then(() => grants.push(clock.now()));
    await clock.advance(2000);
    expect(grants).toEqual([60_000, 60_000, 60_500, 61_000]);
  });
});
