// The controller's Prometheus metrics, on a registry passed in (tests get their own).

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { OWNER_STATES, WAVE_STAGES, type OwnerState, type WaveStage } from '@outrigger/shared';
import type { Logger } from './log';
import type { ReconcileEvent } from './watch/queue';

export class ControllerMetrics {
  readonly reconciles: Counter<'kind' | 'outcome'>;
  readonly duration: Histogram<'kind' | 'outcome'>;
  readonly queueDepth: Gauge;
  readonly reconcilesRunning: Gauge;
  readonly leader: Gauge;
  readonly watchRestarts: Counter<'resource' | 'reason'>;
  readonly watchEvents: Counter<'resource'>;
  readonly writes: Counter<'resource' | 'verb'>;
  readonly writeFailures: Counter<'resource'>;
  readonly owners: Gauge<'state'>;
  readonly restarts: Counter<'kind'>;
  readonly stalls: Counter<'reason'>;
  readonly waveStopped: Gauge;
  readonly configRevision: Gauge<'revision'>;
  readonly configErrors: Counter<'reason'>;
  readonly waveStage: Gauge<'stage'>;
  readonly gateFailures: Counter<'reason'>;
  readonly rollbacks: Counter;
  readonly forcedRollbackDeletions: Counter;
  readonly historyWrites: Counter<'outcome'>;
  /** Each sidecar set's wave: its restarts, its stop and its stage, by the set's name. */
  readonly sets: ReturnType<ControllerMetrics['setWaveMetrics']>;

  constructor(
    readonly registry: Registry = new Registry(),
    defaults = false,
  ) {
    if (defaults) collectDefaultMetrics({ register: registry, prefix: 'outrigger_controller_' });
    const registers = [registry];
    this.writeFailures = this.failureCounter(registers);
    ({
      stalls: this.stalls,
      waveStopped: this.waveStopped,
      stage: this.waveStage,
      gateFailures: this.gateFailures,
      rollbacks: this.rollbacks,
      forcedRollbackDeletions: this.forcedRollbackDeletions,
      historyWrites: this.historyWrites,
    } = this.waveMetrics(registers));
    this.sets = this.setWaveMetrics(registers);
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
    this.reconcilesRunning = new Gauge({
      name: 'outrigger_controller_reconciles_running',
      help: 'Reconciles running now; with outrigger_controller_queue_depth at 0, the controller is idle.',
      registers,
    });
    this.leader = new Gauge({
      name: 'outrigger_controller_leader',
      help: '1 while this replica is the leader (the only one that writes), else 0.',
      registers,
    });
    ({ restarts: this.watchRestarts, events: this.watchEvents } = this.watchMetrics(registers));
    this.writes = new Counter({
      name: 'outrigger_controller_writes_total',
      help: 'API write calls made (a steady cluster gets none), by resource and verb.',
      labelNames: ['resource', 'verb'],
      registers,
    });
    this.owners = new Gauge({
      name: 'outrigger_controller_owners',
      help: 'Owners (Deployments, StatefulSets, DaemonSets) by state, as of the last wave step.',
      labelNames: ['state'],
      registers,
    });
    this.restarts = new Counter({
      name: 'outrigger_controller_restarts_total',
      help: 'Owners restarted, by kind: rollout (new revision), heal (escaped pods), shed (opted out).',
      labelNames: ['kind'],
      registers,
    });
    this.configRevision = new Gauge({
      name: 'outrigger_controller_config_revision',
      help: 'The configuration revision in force (1 for the current revision label).',
      labelNames: ['revision'],
      registers,
    });
    this.configErrors = new Counter({
      name: 'outrigger_controller_config_errors_total',
      help: 'ConfigMap versions refused (missing, no key, invalid); the last good one stays.',
      labelNames: ['reason'],
      registers,
    });
  }

  /** Metrics of refused writes, registered apart to keep the constructor short. */
  private watchMetrics(registers: Registry[]) {
    return {
      restarts: new Counter({
        name: 'outrigger_controller_watch_restarts_total',
        help: 'Watches restarted, by reason: error (after a failure, with back-off) or resync (the periodic re-list that also replaces a silent watch).',
        labelNames: ['resource', 'reason'] as const,
        registers,
      }),
      events: new Counter({
        name: 'outrigger_controller_watch_events_total',
        help: 'Watch events received (added, modified, deleted), by resource: what the controller has seen of the cluster.',
        labelNames: ['resource'] as const,
        registers,
      }),
    };
  }

  private failureCounter(registers: Registry[]): Counter<'resource'> {
    return new Counter({
      name: 'outrigger_controller_write_failures_total',
      help: 'Owner patches the API server refused (not conflicts); each owner backs off, the wave goes on.',
      labelNames: ['resource'],
      registers,
    });
  }

  /** The wave's stops and stage, the health gate, rollbacks and the revision history. */
  private waveMetrics(registers: Registry[]) {
    return {
      stalls: new Counter({
        name: 'outrigger_controller_rollout_stalls_total',
        help: 'Rollouts of ours that stalled or passed their deadline and stopped the wave.',
        labelNames: ['reason'],
        registers,
      }),
      waveStopped: new Gauge({
        name: 'outrigger_controller_wave_stopped',
        help: '1 while the wave is stopped (a rollout stalled; resume or change the configuration).',
        registers,
      }),
      stage: new Gauge({
        name: 'outrigger_controller_wave_stage',
        help: 'The wave stage as of the last wave step: 1 for the stage it is in, 0 for the others.',
        labelNames: ['stage'],
        registers,
      }),
      gateFailures: new Counter({
        name: 'outrigger_controller_gate_failures_total',
        help: 'Health gates failed, each of which stopped its wave: proxy-failing, rollout-stalled, deadline-exceeded.',
        labelNames: ['reason'],
        registers,
      }),
      rollbacks: new Counter({
        name: 'outrigger_controller_rollbacks_total',
        help: 'Owners rolled back to the last good revision after their wave failed its gate.',
        registers,
      }),
      forcedRollbackDeletions: new Counter({
        name: 'outrigger_controller_forced_rollback_deletions_total',
        help: 'Pods deleted to finish a StatefulSet rollback: not Ready on the failed revision, which OrderedReady never replaces.',
        registers,
      }),
      historyWrites: new Counter({
        name: 'outrigger_controller_history_writes_total',
        help: 'Writes of the revision history ConfigMap, by outcome (recorded, failed).',
        labelNames: ['outcome'],
        registers,
      }),
    };
  }

  /** The sidecar sets' waves (the proxy's are the metrics above, unlabelled, as before sets). */
  private setWaveMetrics(registers: Registry[]) {
    return {
      restarts: new Counter({
        name: 'outrigger_controller_set_restarts_total',
        help: "Owner restarts made for a sidecar set's wave, by set and kind (one restart made for several sets counts for each).",
        labelNames: ['set', 'kind'],
        registers,
      }),
      stopped: new Gauge({
        name: 'outrigger_controller_set_wave_stopped',
        help: "1 while the sidecar set's wave is stopped.",
        labelNames: ['set'],
        registers,
      }),
      stage: new Gauge({
        name: 'outrigger_controller_set_wave_stage',
        help: "The sidecar set's wave stage as of the last wave step: 1 for the stage it is in.",
        labelNames: ['set', 'stage'],
        registers,
      }),
    };
  }

  /** A sidecar set's wave as of the last step; `sets` are the sets configured now. */
  setSetWave(set: string, stage: WaveStage, stopped: boolean): void {
    this.sets.stopped.set({ set }, stopped ? 1 : 0);
    for (const s of WAVE_STAGES) this.sets.stage.set({ set, stage: s }, s === stage ? 1 : 0);
  }

  setStage(stage: WaveStage): void {
    for (const s of WAVE_STAGES) this.waveStage.set({ stage: s }, s === stage ? 1 : 0);
  }

  /** Owners by state, every state given (zero when none). */
  setOwnerStates(counts: ReadonlyMap<OwnerState, number>): void {
    for (const state of OWNER_STATES) this.owners.set({ state }, counts.get(state) ?? 0);
  }

  /**
   * Forgets the wave's view (owners by state, stage, stop): only the leader plans, and a replica
   * that stopped leading would otherwise report its last plan beside the new leader's.
   */
  /** A reconcile's end, by its key's kind (the key's part before its first slash), and logged. */
  observeReconcile(event: ReconcileEvent, logger: Logger): void {
    const labels = { kind: event.key.split('/')[0] ?? 'unknown', outcome: event.outcome };
    this.reconciles.inc(labels);
    this.duration.observe(labels, event.durationMs / 1000);
    logger.debug('reconciled', {
      key: event.key,
      outcome: event.outcome,
      durationMs: Math.round(event.durationMs * 1000) / 1000,
    });
  }

  forgetWave(): void {
    this.owners.reset();
    this.waveStage.reset();
    this.waveStopped.set(0);
    this.sets.stopped.reset();
    this.sets.stage.reset();
  }

  setRevision(revision: string): void {
    this.configRevision.reset();
    this.configRevision.set({ revision }, 1);
  }
}
