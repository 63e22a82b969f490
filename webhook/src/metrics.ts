// The webhook's Prometheus metrics, on a registry passed in (tests get their own).

import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
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

  constructor(
    readonly registry: Registry = new Registry(),
    defaults = false,
  ) {
    if (defaults) collectDefaultMetrics({ register: registry, prefix: 'outrigger_webhook_' });
    const registers = [registry];
    this.admissions = new Counter({
      name: 'outrigger_webhook_admissions_total',
      help: 'Admission requests answered, by endpoint, outcome (injected, skipped, stamped, unchanged, invalid, error) and reason.',
      labelNames: ['endpoint', 'outcome', 'reason'],
      registers,
    });
    this.duration = new SeriesHistogram({
      name: 'outrigger_webhook_admission_duration_seconds',
      help: 'Time from the request body being read to the response being written.',
      labelNames: ['endpoint', 'outcome'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
      registers,
    });
    this.inFlight = new Gauge({
      name: 'outrigger_webhook_requests_in_flight',
      help: 'Admission requests being answered.',
      labelNames: ['endpoint'],
      registers,
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
    this.connectionsRefused = connectionCounter(registers);
  }

  private readonly answered = new Map<string, { count: () => void; duration: Series }>();

  /**
   * Counts one answered admission and its duration. The labelled counter and duration series
   * are looked up once per combination: resolving label objects on every request is a
   * measurable share of it.
   */
  observe(labels: { endpoint: string; outcome: string; reason: string }, seconds: number): void {
    const key = `${labels.endpoint}|${labels.outcome}|${labels.reason}`;
    let entry = this.answered.get(key);
    if (!entry) {
      const counter = this.admissions.labels(labels.endpoint, labels.outcome, labels.reason);
      const { endpoint, outcome } = labels;
      entry = {
        count: () => counter.inc(),
        duration: this.duration.seriesOf({ endpoint, outcome }),
      };
      this.answered.set(key, entry);
    }
    entry.count();
    entry.duration.observe(seconds);
  }

  private readonly inFlightChildren = new Map<string, { inc: () => void; dec: () => void }>();

  /** The in-flight gauge of one endpoint, looked up once. */
  inFlightOf(endpoint: string): { inc: () => void; dec: () => void } {
    let child = this.inFlightChildren.get(endpoint);
    if (!child) {
      child = this.inFlight.labels(endpoint);
      this.inFlightChildren.set(endpoint, child);
    }
    return child;
  }

  setRevision(revision: string): void {
    this.configRevision.reset();
    this.configRevision.set({ revision }, 1);
  }
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
    help: 'Connections closed because --max-connections were open: the oldest idle one, or the new one when none was idle.',
    registers,
  });
}
