// The controller's Prometheus metrics, on a registry passed in (tests get their own).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class ControllerMetrics {
  readonly reconciles: Counter<'kind' | 'outcome'>;
  readonly duration: Histogram<'kind' | 'outcome'>;
  readonly queueDepth: Gauge;
  readonly leader: Gauge;
  readonly watchRestarts: Counter<'resource'>;
  readonly writes: Counter<'resource' | 'verb'>;

  constructor(
    readonly registry: Registry = new Registry(),
    defaults = false,
  ) {
    if (defaults) collectDefaultMetrics({ register: registry, prefix: 'outrigger_controller_' });
    const registers = [registry];
    this.reconciles = new Counter({
      name: 'outrigger_controller_reconciles_total',
      help: 'Reconciles finished, by kind of key and outcome (done, requeue, retry, terminal).',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.duration = new Histogram({
      name: 'outrigger_controller_reconcile_duration_seconds',
      help: 'Time one reconcile took, write-limit waits included.',
      labelNames: ['kind', 'outcome'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'outrigger_controller_queue_depth',
      help: 'Keys waiting in the work queue (queued, to run again, delayed).',
      registers,
    });
    this.leader = new Gauge({
      name: 'outrigger_controller_leader',
      help: '1 while this replica is the leader (the only one that writes), else 0.',
      registers,
    });
    this.watchRestarts = new Counter({
      name: 'outrigger_controller_watch_restarts_total',
      help: 'Watches restarted after an error, a silence or a periodic resync.',
      labelNames: ['resource'],
      registers,
    });
    this.writes = new Counter({
      name: 'outrigger_controller_writes_total',
      help: 'API write calls made (a steady cluster gets none), by resource and verb.',
      labelNames: ['resource', 'verb'],
      registers,
    });
  }
}
