import { WaitFailedError, WaitTimeoutError, done, failed, pending, waitFor } from '../src';

describe('waitFor', () => {
  it('resolves once the condition holds, having checked it until then', async () => {
    let checks = 0;
    await waitFor('the third check', () => ++checks === 3, { intervalMs: 1 });
    expect(checks).toBe(3);
  });

  it('takes a condition that answers with a promise', async () => {
    let ready = false;
    setTimeout(() => (ready = true), 20);
    await waitFor('ready', () => Promise.resolve(ready));
    expect(ready).toBe(true);
  });

  it('throws after the deadline, saying what it waited for and how often it checked', async () => {
    const started = Date.now();
    const error = await waitFor('the moon to turn blue', () => false, {
      timeoutMs: 50,
      intervalMs: 10,
    }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect((error as Error).message).toMatch(
      /^timed out waiting for the moon to turn blue: not done by the deadline \S+ \(\d+ checks\)\. Last observed: not yet$/,
    );
    expect((error as WaitTimeoutError).checks).toBeGreaterThan(1);
  });

  it('counts an error a check throws as not yet, and names it if time runs out', async () => {
    let checks = 0;
    const flaky = (): boolean => {
      checks++;
      if (checks < 3) throw new Error('the API server is briefly away');
      return true;
    };
    await waitFor('a flaky check', flaky, { intervalMs: 1 });
    expect(checks).toBe(3);
    const broken = (): boolean => {
      throw new Error('the check is broken');
    };
    await expect(waitFor('anything', broken, { timeoutMs: 30 })).rejects.toThrow(
      'Last observed: Error: the check is broken',
    );
  });

  it('resolves with the value a check is done with, and stops at once when it failed', async () => {
    let n = 0;
    await expect(waitFor('three', () => (++n === 3 ? done('three') : pending(n)))).resolves.toBe(
      'three',
    );
    const error = await waitFor('never', () => failed('it cannot happen any more')).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(WaitFailedError);
    expect((error as Error).message).toBe('gave up waiting for never: it cannot happen any more');
  });
});
