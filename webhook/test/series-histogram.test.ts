// SeriesHistogram against prom-client's own Histogram: fed the same observations, a registry
// gives the same exposition text and the same JSON for both.

import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { SeriesHistogram } from '../src/series-histogram';

const BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];
const LABELS = [
  { endpoint: 'pods', outcome: 'injected' },
  { endpoint: 'pods', outcome: 'skipped' },
  { endpoint: 'workloads', outcome: 'stamped' },
] as const;

function pair(): {
  ours: SeriesHistogram<'endpoint' | 'outcome'>;
  theirs: Histogram<'endpoint' | 'outcome'>;
  registries: [Registry, Registry];
} {
  const registries: [Registry, Registry] = [new Registry(), new Registry()];
  const config = {
    name: 'test_duration_seconds',
    help: 'Test.',
    buckets: BUCKETS,
    labelNames: ['endpoint', 'outcome'] as const,
  };
  const ours = new SeriesHistogram({
    ...config,
    labelNames: [...config.labelNames],
    registers: [registries[0]],
  });
  const theirs = new Histogram({
    ...config,
    labelNames: [...config.labelNames],
    registers: [registries[1]],
  });
  return { ours, theirs, registries };
}

const observation = fc.tuple(
  fc.integer({ min: 0, max: LABELS.length - 1 }),
  fc.oneof(fc.constantFrom(...BUCKETS, 0, 2), fc.double({ min: 0, max: 2, noNaN: true })),
);

describe('SeriesHistogram', () => {
  it('exposes what prom-client exposes for the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(observation, { maxLength: 60 }), async (observations) => {
        const { ours, theirs, registries } = pair();
        // Each series is made at its first observation, as the webhook makes them: both list
        // their series in the order they were first observed.
        for (const [i, value] of observations) {
          ours.seriesOf(LABELS[i] ?? LABELS[0]).observe(value);
          theirs.observe(LABELS[i] ?? {}, value);
        }
        const [a, b] = registries;
        expect(await a.metrics()).toBe(await b.metrics());
        expect(await a.getMetricsAsJSON()).toEqual(await b.getMetricsAsJSON());
      }),
      { numRuns: 200 },
    );
  });

  it('keeps a series valid across a reset, which empties it as prom-client empties its own', async () => {
    const { ours, theirs, registries } = pair();
    const series = ours.seriesOf(LABELS[0]);
    series.observe(0.003);
    theirs.observe(LABELS[0], 0.003);
    ours.reset();
    theirs.reset();
    const [a, b] = registries;
    expect(await a.metrics()).toBe(await b.metrics());
    series.observe(0.2);
    theirs.observe(LABELS[0], 0.2);
    expect(await a.metrics()).toBe(await b.metrics());
    expect(await a.metrics()).toContain(
      'test_duration_seconds_bucket{le="0.25",endpoint="pods",outcome="injected"} 1',
    );
  });

  it('gives the same series for the same labels', () => {
    const { ours } = pair();
    expect(ours.seriesOf({ endpoint: 'pods', outcome: 'x' })).toBe(
      ours.seriesOf({ outcome: 'x', endpoint: 'pods' }),
    );
  });
});
