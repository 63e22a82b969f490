// The webhook's Prometheus metrics, on a registry passed in (tests get their own). What every
// admission updates (its count, its duration, the requests in flight) is kept in plain numbers
// and arrays, resolved once per label combination, and handed to prom-client when scraped:
// prom-client resolves and checks its labels on every update, even through a labelled child
// (docs/benchmarks.md, Webhook, "What an admission's parts cost", rows "the duration
// histogram" and "counts at the scrape").

import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { BodyBudget } from './body';
import { SeriesHistogram, type Series } from './series-histogram';

export class WebhookMetrics {
  readonly admissions: Counter<'endpoint' | 'outcome' | 'reason'>;
  readonly duration: SeriesHistogram<'endpoint' | 'outcome'>;
  readonly inFlight: Gauge<'endpoint'>;
  readonly certificateExpiry: Gauge;
  readonly configRevision: Gauge<'revision'>;
  readonly configReloadFailures: Counter<'source'>;
  readonly configRefreshes: Counter<'result'>;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly internalErrors: Counter<'endpoint'>;
  readonly connectionsRefused: Counter;
  readonly pinnedAdmissions: Counter<'rule'>;
  readonly setInjections: Counter<'set'>;

  constructor(
    readonly registry: Registry = new Registry(),
    defaults = false,
  ) {
    if (defaults) collectDefaultMetrics({ register: registry, prefix: 'outrigger_webhook_' });
    const registers = [registry];
    const answered = this.answered;
    this.admissions = new Counter({
      name: 'outrigger_webhook_admissions_total',
      help: 'Admission requests answered, by endpoint, outcome (injected, skipped, stamped, unchanged, invalid, error) and reason.',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers,
      // Adds what observe() counted since the last scrape.
      collect(this: Counter<'endpoint' | 'outcome' | 'reason'>) {
        for (const entry of answered.values()) {
          if (entry.count === 0) continue;
          this.inc(entry.labels, entry.count);
          entry.count = 0;
        }
      },
    });
    this.duration = new SeriesHistogram({
      name: 'outrigger_webhook_admission_duration_seconds',
      help: 'Time from the request body being read to the response being written.',
      labelNames: ['endpoint', 'outcome'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    const inFlight = this.inFlightCounts;
    this.inFlight = new Gauge({
      name: 'outrigger_webhook_requests_in_flight',
      help: 'Admission requests being answered.',
      labelNames: ['endpoint'],
      registers,
      collect(this: Gauge<'endpoint'>) {
        for (const [endpoint, count] of inFlight) this.set({ endpoint }, count.n);
      },
    });
    this.certificateExpiry = new Gauge({
      name: 'outrigger_webhook_certificate_expiry_timestamp_seconds',
      help: 'When the serving certificate expires (Unix time).',
      registers,
    });
    this.configRevision = new Gauge({
      name: 'outrigger_webhook_config_revision',
      help: 'The configuration revision in force (1 for the current revision label).',
      labelNames: ['revision'],
      registers,
    });
    this.configReloadFailures = new Counter({
      name: 'outrigger_webhook_config_reload_failures_total',
      help: 'Configuration versions refused as invalid or unreadable; the last good one stays in force.',
      labelNames: ['source'],
      registers,
    });
    this.configRefreshes = new Counter({
      name: 'outrigger_webhook_config_refreshes_total',
      help: 'Configuration re-reads triggered by a pod asking for a revision the webhook had not seen.',
      labelNames: ['result'],
      registers,
    });
    this.watchRestarts = new Counter({
      name: 'outrigger_webhook_watch_restarts_total',
      help: 'Watches restarted, by reason: error (after a failure, with back-off) or resync (the periodic re-list that also replaces a silent watch).',
      labelNames: ['resource', 'reason'],
      registers,
    });
    this.internalErrors = new Counter({
      name: 'outrigger_webhook_internal_errors_total',
      help: 'Requests that failed inside the webhook and were answered according to --on-error.',
      labelNames: ['endpoint'],
      registers,
    });
    this.pinnedAdmissions = pinnedCounter(registers);
    this.setInjections = setCounter(registers, this.setCounts);
    this.connectionsRefused = connectionCounter(registers);
  }

  /** By label combination: admissions counted since the last scrape, and their durations. */
  private readonly answered = new Map<
    string,
    { labels: Record<'endpoint' | 'outcome' | 'reason', string>; count: number; duration: Series }
  >();

  /**
   * Counts one answered admission and its duration. The labelled counter and duration series
   * are looked up once per combination: resolving label objects on every request is a
   * measurable share of it.
   */
  observe(labels: { endpoint: string; outcome: string; reason: string }, seconds: number): void {
    const key = `${labels.endpoint}|${labels.outcome}|${labels.reason}`;
    let entry = this.answered.get(key);
    if (!entry) {
      const { endpoint, outcome, reason } = labels;
      const duration = this.duration.seriesOf({ endpoint, outcome });
      entry = { labels: { endpoint, outcome, reason }, count: 0, duration };
      this.answered.set(key, entry);
    }
    entry.count++;
    entry.duration.observe(seconds);
  }

  /** Pods given each sidecar set since the last scrape. */
  private readonly setCounts = new Map<string, { n: number }>();

  /** Counts one injected pod's sets; a plain count per set, handed over when scraped. */
  countSets(sets: readonly string[]): void {
    for (const set of sets) {
      let count = this.setCounts.get(set);
      if (!count) this.setCounts.set(set, (count = { n: 0 }));
      count.n++;
    }
  }

  private readonly inFlightCounts = new Map<string, InFlight>();

  /** The requests in flight at one endpoint, looked up once; the gauge reads it when scraped. */
  inFlightOf(endpoint: string): InFlight {
    let count = this.inFlightCounts.get(endpoint);
    if (!count) {
      count = new InFlight();
      this.inFlightCounts.set(endpoint, count);
    }
    return count;
  }

  /** Gauges of the large-body budget: what it holds, and how many requests wait for it. */
  watchBodyBudget(budget: BodyBudget): void {
    const registers = [this.registry];
    new Gauge({
      name: 'outrigger_webhook_large_body_bytes_reserved',
      help: 'Bytes of the large-body budget (--max-body-bytes-in-flight) reserved by requests being read or answered.',
      registers,
      collect(this: Gauge) {
        this.set(budget.inUse);
      },
    });
    new Gauge({
      name: 'outrigger_webhook_large_bodies_waiting',
      help: 'Requests with a large body waiting, unread, for room in the large-body budget.',
      registers,
      collect(this: Gauge) {
        this.set(budget.waitingCount);
      },
    });
  }

  setRevision(revision: string): void {
    this.configRevision.reset();
    this.configRevision.set({ revision }, 1);
  }
}

export class InFlight {
  n = 0;
  inc(): void {
    this.n++;
  }
  dec(): void {
    this.n--;
  }
}

function setCounter(registers: Registry[], counts: Map<string, { n: number }>): Counter<'set'> {
  return new Counter({
    name: 'outrigger_webhook_set_injections_total',
    help: 'Pods injected, by sidecar set (proxy is the default set): a pod counts once for every set it was given.',
    labelNames: ['set'],
    registers,
    // Adds what countSets() counted since the last scrape.
    collect(this: Counter<'set'>) {
      for (const [set, count] of counts) {
        if (count.n === 0) continue;
        this.inc({ set }, count.n);
        count.n = 0;
      }
    },
  });
}

function pinnedCounter(registers: Registry[]): Counter<'rule'> {
  return new Counter({
    name: 'outrigger_webhook_pinned_admissions_total',
    help: "Pods injected with a revision other than the current one, by rule: pinned (the template's revision, from the history) or fallback (the template's revision is no longer in the history: the current one, with a warning).",
    labelNames: ['rule'],
    registers,
  });
}

function connectionCounter(registers: Registry[]): Counter {
  return new Counter({
    name: 'outrigger_webhook_connections_closed_at_cap_total',
    help: 'Connections closed because --max-connections were open: of the client with the most idle or still arriving, the oldest idle one, else the oldest still arriving; else the new one.',
    registers,
  });
}
