// A prom-client Histogram whose labelled series are resolved once and then observed with a
// few array writes. prom-client's own observe, even through a labelled child, checks the
// labels, builds their hash string and finds the bucket through a property named by its bound,
// on every call: 3 % of an admission's CPU time (docs/benchmarks.md, Webhook, "What an
// admission's parts cost", row "the duration histogram"). The series here are turned into
// prom-client's format only when scraped, so the exposition is the one prom-client gives (a unit
// test holds them to the same text).

import { Histogram, type HistogramConfiguration } from 'prom-client';

/** One labelled series: its observations by bucket (not cumulative), their sum and count. */
export class Series {
  /** counts[i]: observations in (bounds[i - 1], bounds[i]]; the last one is over every bound. */
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(value: number): void {
    // A duration is always finite; prom-client would throw on anything else, this drops it.
    if (!Number.isFinite(value)) return;
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] ?? Infinity)) i++;
    this.counts[i] = (this.counts[i] ?? 0) + 1;
    this.sum += value;
    this.count++;
  }

  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

/** What prom-client's registry reads from a histogram, one entry per line of the exposition. */
interface ExportedValue {
  labels: Record<string, string | number>;
  value: number;
  metricName: string;
  exemplar?: null;
  sharedLabels: Readonly<Record<string, string>>;
}

interface Exported {
  name: string;
  help: string;
  type: string;
  values: ExportedValue[];
  aggregator: string;
}

export class SeriesHistogram<T extends string> extends Histogram<T> {
  private readonly metricName: string;
  private readonly bounds: number[];
  private readonly names: readonly T[];
  private readonly all = new Map<string, Series>();

  constructor(config: HistogramConfiguration<T> & { buckets: number[]; labelNames: readonly T[] }) {
    super(config);
    this.metricName = config.name;
    this.bounds = [...config.buckets].sort((a, b) => a - b);
    this.names = config.labelNames;
  }

  /**
   * The series of these labels, made on first use. Keep it and observe into it: looking it up
   * is the cost this class saves.
   */
  seriesOf(labels: Record<T, string>): Series {
    const key = this.names.map((n) => labels[n]).join('\u0000');
    let series = this.all.get(key);
    if (!series) {
      const own: Record<string, string> = {};
      for (const n of this.names) own[n] = labels[n];
      series = new Series(own, this.bounds);
      this.all.set(key, series);
    }
    return series;
  }

  /** Zeroes every series (as prom-client's reset empties its own); a series kept stays valid. */
  override reset(): void {
    super.reset();
    // Also called by prom-client's constructor, before this class's fields exist.
    const all = this.all as Map<string, Series> | undefined;
    for (const series of all?.values() ?? []) series.zero();
  }

  /**
   * What prom-client's registry formats (it calls this method when a metric has it, and its
   * `get()` builds on it): the series observed the usual way, then these.
   */
  async getForPromString(): Promise<Exported> {
    const parent = Histogram.prototype as unknown as { getForPromString: () => Promise<Exported> };
    const base = await parent.getForPromString.call(this);
    const bucket = `${this.metricName}_bucket`;
    for (const series of this.all.values()) {
      if (series.count === 0) continue;
      const sharedLabels = series.labels;
      let below = 0;
      this.bounds.forEach((le, i) => {
        below += series.counts[i] ?? 0;
        base.values.push({
          labels: { le },
          value: below,
          metricName: bucket,
          exemplar: null,
          sharedLabels,
        });
      });
      base.values.push(
        {
          labels: { le: '+Inf' },
          value: series.count,
          metricName: bucket,
          exemplar: null,
          sharedLabels,
        },
        { labels: {}, value: series.sum, metricName: `${this.metricName}_sum`, sharedLabels },
        { labels: {}, value: series.count, metricName: `${this.metricName}_count`, sharedLabels },
      );
    }
    return base;
  }
}
