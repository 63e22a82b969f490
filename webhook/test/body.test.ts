// The shared body budget: requests are granted in the order they asked, a request that does
// not fit waits unread, a withdrawn request gives up its place, and a body larger than the
// whole budget still runs alone.

import { BodyBudget } from '../src/body';

async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('BodyBudget', () => {
  it('grants what fits at once and makes the rest wait, in order', async () => {
    const budget = new BodyBudget(100);
    expect(await settled(budget.reserve(60).granted)).toBe(true);
    const second = budget.reserve(50);
    const third = budget.reserve(10);
    // The third would fit, but it asked after the second: first come, first served.
    expect(await settled(second.granted)).toBe(false);
    expect(await settled(third.granted)).toBe(false);
    budget.release(60);
    expect(await settled(second.granted)).toBe(true);
    expect(await settled(third.granted)).toBe(true);
    expect(budget.inUse).toBe(60);
  });

  it('lets a withdrawn request go, and the next one in', async () => {
    const budget = new BodyBudget(100);
    void budget.reserve(90).granted;
    const big = budget.reserve(50);
    const small = budget.reserve(5);
    big.cancel();
    expect(await settled(small.granted)).toBe(true);
    expect(budget.inUse).toBe(95);
  });

  it('runs a body larger than the whole budget alone', async () => {
    const budget = new BodyBudget(100);
    expect(await settled(budget.reserve(500).granted)).toBe(true);
    const next = budget.reserve(1);
    expect(await settled(next.granted)).toBe(false);
    budget.release(500);
    expect(await settled(next.granted)).toBe(true);
  });
});
