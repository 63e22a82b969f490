import { WaitForTimeoutError, waitFor } from '../src';

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
    expect(error).toBeInstanceOf(WaitForTimeoutError);
    expect((error as Error).message).toMatch(
      /^timed out after 50 ms waiting for the moon to turn blue \(checked \d+ times\)$/,
    );
    expect((error as WaitForTimeoutError).checks).toBeGreaterThan(1);
  });

  it('ends with the error a check throws, without checking again', async () => {
    let checks = 0;
    const broken = (): boolean => {
      checks++;
      throw new Error('the check is broken');
    };
    await expect(waitFor('anything', broken)).rejects.toThrow('the check is broken');
    expect(checks).toBe(1);
  });
});
