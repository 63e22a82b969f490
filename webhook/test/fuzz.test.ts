// Fuzzing the real webhook binary over HTTPS, as an attacker inside the cluster could: random
// values in every field of a real review (property-based), every hostile class of body, and
// slow, idle and truncated connections, all at once. The process must never exit, never answer
// 5xx or take the fail-open path, answer each class as owed (400 for malformed, 200 with the
// uid echoed otherwise), stay under its memory limit and keep answering its probes.
// `make fuzz` is the longer run, with figures.

import { Agent } from 'node:https';
import fc from 'fast-check';
import { rssMiB, shippedMemoryLimitMiB } from '@outrigger/testkit';
import {
  mixCase,
  mutatedReview,
  Random,
  realisticCase,
  type FuzzCase,
  type Json,
} from '../bench/fuzz-cases';
import {
  HealthProber,
  judge,
  metricValue,
  post,
  rawConnection,
  runMix,
  slowBody,
  slowHeaders,
  startFuzzTarget,
  truncatedBody,
  type RunningWebhook,
} from '../bench/fuzz-harness';

jest.setTimeout(180_000);

const LIMIT = 7 * 1024 * 1024;
let target: RunningWebhook;
let agent: Agent;
let prober: HealthProber;

beforeAll(async () => {
  target = await startFuzzTarget();
  agent = new Agent({ keepAlive: true, maxSockets: 8 });
  prober = new HealthProber(target.metricsPort);
  prober.start();
});

afterAll(async () => {
  agent.destroy();
  await prober.stop();
  await target.stop();
});

const internalErrors = (): Promise<number> =>
  metricValue(target, 'outrigger_webhook_internal_errors_total');

async function expectOwed(c: FuzzCase): Promise<void> {
  const verdict = judge(c, await post(target, agent, c));
  expect(verdict).toBe(true);
}

const json: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double(),
    fc.integer(),
    fc.string(),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string(), tie('value'), { maxKeys: 5 }),
  ),
})).value;

describe('the webhook under fuzzing', () => {
  it('answers any value in any field of a real review with 200 or 400, never failing open', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), json, async (seed, value) => {
        const c = mutatedReview(new Random(seed), `prop-${seed}`, value as Json);
        await expectOwed(c);
      }),
      { numRuns: 300 },
    );
    expect(await internalErrors()).toBe(0);
  });

  it('answers arbitrary bytes with 400', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4000 }), async (bytes) => {
        const c: FuzzCase = {
          kind: 'bytes',
          body: Buffer.from(bytes).toString('latin1'),
          expect: 'bad-request',
        };
        await expectOwed(c);
      }),
      { numRuns: 200 },
    );
  });

  it('answers every hostile class as owed, beside slow, idle and truncated clients', async () => {
    const idle = await Promise.all(Array.from({ length: 30 }, () => rawConnection(target)));
    const slow = Promise.all([slowHeaders(target, 500), slowBody(target, 50_000, 500)]);
    const random = new Random(7);
    const truncated = Array.from({ length: 20 }, () =>
      truncatedBody(target, realisticCase('cut').body),
    );
    const mix = await runMix(target, {
      count: 1500,
      concurrency: 8,
      next: (i) => mixCase(random, i, { limit: LIMIT, largeShare: 0.02 }),
    });
    await Promise.all(truncated);
    expect(mix.wrong).toEqual([]);
    expect(mix.failed).toBe(0);
    expect(mix.peakRssMiB).toBeLessThan(shippedMemoryLimitMiB('webhook'));

    // The header timeout (10 s) and the request timeout (30 s) fire on time, give or take the
    // check interval (1 s).
    const [headers, body] = await slow;
    expect(headers.ms).toBeGreaterThan(9_000);
    expect(headers.ms).toBeLessThan(12_500);
    expect(body.ms).toBeGreaterThan(29_000);
    expect(body.ms).toBeLessThan(32_500);
    for (const s of idle) s.destroy();

    // Still serving, still under its limit, no probe left unanswered.
    await expectOwed(realisticCase('after'));
    expect(await internalErrors()).toBe(0);
    expect(target.exitCode()).toBeUndefined();
    expect(rssMiB(target.pid)).toBeLessThan(shippedMemoryLimitMiB('webhook'));
    await prober.stop();
    expect(prober.failures).toBe(0);
    expect(Math.max(...prober.latenciesMs)).toBeLessThan(2000);
    prober = new HealthProber(target.metricsPort);
  });

  it('ends with exit code 0 on SIGTERM after all that', async () => {
    await prober.stop();
    expect(await target.stop()).toBe(0);
  });
});
