// The wave: one key for the whole cluster (WAVE_KEY), because the budget of rollouts at once is
// cluster-wide and the wave's stop holds for every owner. Built once with what it reads and
// writes through, it keeps what one step must remember for the next (owners whose write was
// refused, the dry-run restarts already logged). Each step reads the owners as the index last
// assessed them (owner-index.ts: only those an event touched are assessed again), plans the wave
// over those that can matter (shared/src/rollout/quiet-owners.ts, pure), and carries the plan
// out: the wave's record on the ConfigMap (wave-record.ts), completions, restarts, forced
// rollbacks (forced-rollback.ts), Events and metrics. Running a step twice does nothing the
// second time: every decision is read back from the cluster, and each write carries the
// resourceVersion it was decided on, so a write from a stale cache fails instead of repeating.

import { apiErrorMessage, backoffDelay, isRefusal, WORKLOAD_RESOURCES } from '@outrigger/kube';
import {
  appliedSets,
  completionPatch,
  earliest,
  ownerKey,
  planFleet,
  readWave,
  type FleetOwners,
  type OwnerAssessment,
  type OwnerRef,
  type WaveInput,
  type WavePlan,
  type WaveReportEntry,
  type Workload,
} from '@outrigger/shared';
import type { ConfigInForce } from '../config/config-map';
import { workloadSubject } from '../events';
import type { AssessedFleet } from '../watch/owner-index';
import type { Result } from '../watch/queue';
import { deleteStuckPod } from './stuck-pod-deletion';
import {
  MIN_RECHECK_MS,
  OWNER_BACKOFF_BASE_MS,
  OWNER_BACKOFF_CAP_MS,
  type OwnerBackoff,
} from './owner-backoff';
import type { ActedOn, Joinable, StepContext, WaveDeps, WaveOf } from './wave-contract';
import { reportEvent } from './wave-messages';
import {
  joinableOwners,
  ordersByOwner,
  restartOwner,
  unstampedOf,
  type PlannedWave,
  type WaveOrder,
} from './owner-restart';
import { proxyWave, setWave } from './wave-of';
import { WaveRecord } from './wave-record';
import { WaveWrites, withResourceVersion } from './wave-writes';

export const WAVE_KEY = 'Wave';

function refOfWorkload(workload: Workload): OwnerRef {
  return {
    namespace: workload.metadata?.namespace ?? '',
    kind: workload.kind,
    name: workload.metadata?.name ?? '',
  };
}

/** One step in progress: its context, and what it counts for the next plan. */
interface Step extends StepContext {
  /** Owners whose write the API server refused in this step. */
  refusals: number;
  /** The report's detail of each owner this step restarts, by wave and owner, for its log and Event. */
  details: Map<string, string>;
}

const detailKey = (wave: WaveOf, key: string): string => `${wave.keys.set} ${key}`;

export class WaveRunner {
  /** Owners whose last write the API server refused, by ownerKey, with when to try again. */
  readonly failures = new Map<string, OwnerBackoff>();
  /**
   * The dry-run restart last logged for each owner and set: its revision and reason. One entry
   * per owner and set, dropped with the owner, so a dry-run wave that sees many revisions keeps
   * no more than the fleet.
   */
  private readonly dryRunReported = new Map<string, { owner: string; said: string }>();
  private readonly record: WaveRecord;
  /** The sets whose wave the metrics report on. */
  private setsReported = new Set<string>();

  constructor(private readonly deps: WaveDeps) {
    this.record = new WaveRecord(deps);
  }

  /**
   * One step of the wave to `config`, writing only with `acquireWrite`'s permission (the term of
   * leadership that runs it). The queue runs one step at a time.
   */
  async step(config: ConfigInForce, acquireWrite: () => Promise<void>): Promise<Result> {
    const { deps } = this;
    const { view } = deps;
    const nowMs = deps.clock();
    const fleet = view.assess(config, nowMs);
    for (const key of this.failures.keys()) if (!view.workload(key)) this.failures.delete(key);
    for (const [key, { owner }] of this.dryRunReported)
      if (!view.workload(owner)) this.dryRunReported.delete(key);
    const configMap = view.configMap();
    const step: Step = {
      config,
      configMap,
      writes: new WaveWrites(deps, acquireWrite),
      refusals: 0,
      details: new Map(),
    };
    const waves: PlannedWave[] = [await this.planProxy(config, fleet, step, nowMs)];
    for (const set of appliedSets(config.config)) {
      const wave = setWave(config, set);
      const owners = view.assessSet(config, set, nowMs);
      const plan = planFleet(this.inputOf(wave, owners, step, nowMs), owners);
      waves.push({ wave, plan: this.actedOn(plan, step, wave, owners) });
    }
    this.observe(fleet, waves);
    await this.carryOut(waves, step, nowMs);
    return this.next(step, earliest(waves.map((w) => w.plan.recheckAtMs)), nowMs);
  }

  /** What a wave's planner reads: its revision, rollout and record, and who is backing off. */
  private inputOf(
    wave: WaveOf,
    owners: FleetOwners,
    step: Step,
    nowMs: number,
  ): Omit<WaveInput, 'owners'> {
    return {
      // An owner whose restart was refused waits out its back-off: it holds no slot the next
      // owner could use, and a canary backing off still holds the canary stage.
      backingOff: new Set(
        owners.active.filter((a) => this.backingOff(a, nowMs)).map((a) => ownerKey(a.owner)),
      ),
      revision: wave.revision,
      rollout: wave.config.rollout,
      wave: readWave(step.configMap?.metadata?.annotations, wave.keys),
      nowMs,
      podsSynced: this.deps.view.podsSynced(),
    };
  }

  /** The proxy's wave; a heal is planned again without heals while the webhook does not answer. */
  private async planProxy(
    config: ConfigInForce,
    fleet: AssessedFleet,
    step: Step,
    nowMs: number,
  ): Promise<PlannedWave> {
    const wave = proxyWave(config);
    const input = this.inputOf(wave, fleet, step, nowMs);
    // Early in a wave the plan reports on every owner still due, thousands of them, and the
    // writes below take seconds: only what is acted on is kept across them, so the rest of the
    // plan dies young instead of reaching V8's old generation (docs/benchmarks.md, Controller,
    // "What the figures rest on", "A wave step keeps only what it acts on across its writes").
    let plan = this.actedOn(planFleet(input, fleet), step, wave, fleet);
    if (plan.restart.some((o) => o.kind === 'heal') && !(await this.deps.webhookReady()))
      plan = this.actedOn(planFleet({ ...input, webhookReady: false }, fleet), step, wave, fleet);
    return { wave, plan };
  }

  /** The plan cut to what carryOut writes, logs or reports. */
  private actedOn(plan: WavePlan, step: Step, wave: WaveOf, owners: FleetOwners): ActedOn {
    const restarting = new Set(plan.restart.map((o) => ownerKey(o.owner)));
    const kept = { report: [] as WaveReportEntry[], joinable: [] as Joinable[] };
    const joins = joinableOwners(owners, wave);
    let windowClosed = false;
    let judging = false;
    for (const key of [...step.details.keys()])
      if (key.startsWith(`${wave.keys.set} `)) step.details.delete(key);
    for (const e of plan.report) {
      const key = ownerKey(e.owner);
      if (restarting.has(key)) step.details.set(detailKey(wave, key), e.detail);
      if (e.reason === 'window-closed') windowClosed = true;
      // A forced rollback reads the pods at the failed revision, which is the current one.
      if (e.gate !== undefined || e.reason === 'forced-rollback') judging = true;
      keep(kept, e, wave, joins);
    }
    // A new object with the plan's fields and the cut report: the plan's own report dies here.
    // A rollback still rolling may need a forced rollback, which reads the pods it left: widen.
    if (plan.stage === 'rolling-back') judging = true;
    const unstamped = unstampedOf(owners);
    return { ...plan, ...kept, windowClosed, judging, unstamped };
  }

  /**
   * When to plan again. A refused owner held a slot in this step's plan, or a write met a stale
   * cache: plan again without it, or with the cache caught up. Otherwise at the earliest time the
   * plan may change by itself (a deadline, a back-off running out); anything else that can
   * change it (a rollout completing, a slot freeing, an admin's resume) arrives as a watch event.
   * `plannedAtMs` is the time the plan was made at, which decided who was backing off.
   */
  private next(step: Step, recheckAtMs: number | undefined, plannedAtMs: number): Result {
    if (step.refusals > 0 || step.writes.conflicts > 0) return { requeueAfterMs: MIN_RECHECK_MS };
    const recheck = earliest([recheckAtMs, this.retryAtMs(plannedAtMs)]);
    if (recheck === undefined) return { done: true };
    return { requeueAfterMs: Math.max(MIN_RECHECK_MS, recheck - this.deps.clock()) };
  }

  private backingOff(assessment: OwnerAssessment, nowMs: number): boolean {
    const failed = this.failures.get(ownerKey(assessment.owner));
    return failed !== undefined && failed.untilMs > nowMs && !assessment.inFlight;
  }

  /**
   * The earliest end of a back-off that kept its owner out of the plan made at `plannedAtMs`.
   * One that had run out by then is no time to wait for: its owner was a candidate in that plan,
   * and if it was not restarted, what holds it (the budget, the wave's stop, the mode) changes
   * by an event.
   */
  private retryAtMs(plannedAtMs: number): number | undefined {
    const running = [...this.failures.values()].filter((f) => f.untilMs > plannedAtMs);
    return earliest(running.map((f) => f.untilMs));
  }

  private observe(fleet: AssessedFleet, waves: readonly PlannedWave[]): void {
    const { metrics } = this.deps;
    metrics.setOwnerStates(fleet.states);
    const names = new Set<string>();
    for (const { wave, plan } of waves) {
      if (!wave.set) {
        metrics.waveStopped.set(plan.stopped ? 1 : 0);
        metrics.setStage(plan.stage);
        continue;
      }
      names.add(wave.keys.set);
      metrics.setSetWave(wave.keys.set, plan.stage, plan.stopped);
    }
    // A set taken out of the configuration has no wave to report on any more.
    if ([...this.setsReported].some((n) => !names.has(n))) {
      metrics.sets.stopped.reset();
      metrics.sets.stage.reset();
      for (const { wave, plan } of waves)
        if (wave.set) metrics.setSetWave(wave.keys.set, plan.stage, plan.stopped);
    }
    this.setsReported = names;
    this.deps.onJudging(waves.some((w) => w.plan.judging));
  }

  /**
   * Each wave's record (its stop or resume, stage, window), then what the waves whose record
   * is written act on: completions, the restarts (one write per owner for every wave that
   * restarts it), forced rollbacks, and the report.
   */
  private async carryOut(waves: readonly PlannedWave[], step: Step, nowMs: number) {
    const { record } = this;
    const live: PlannedWave[] = [];
    for (const planned of waves) {
      const { wave, plan } = planned;
      // When the stop or resume met a stale cache, none of this wave's restarts is made: the
      // step runs again once the watch caught up.
      if (!(await record.stopOrResume(plan, step, wave, nowMs))) continue;
      if (plan.record || plan.lastGood) await record.stage(plan, step, wave);
      await record.windowWait(plan, step, wave);
      live.push(planned);
    }
    for (const { wave, plan } of live)
      for (const owner of plan.complete)
        await this.writeOwner(step, owner, nowMs, (w) => this.complete(step, w, wave));
    const orders = ordersByOwner(live, (wave, key) => step.details.get(detailKey(wave, key)) ?? '');
    for (const list of orders.values()) await this.restart(step, list, live, nowMs);
    for (const { wave, plan } of live)
      for (const deletion of plan.deletePods)
        await this.writeOwner(step, deletion.owner, nowMs, (w) =>
          deleteStuckPod(this.deps, step.writes, { deletion, workload: w, keys: wave.keys }, nowMs),
        );
    for (const { wave, plan } of live) await this.report(step, wave, plan.report);
  }

  /**
   * One owner's write, kept from failing the wave: an owner whose patch is refused (a policy
   * webhook, a quota, a validation error) gets a Warning Event and an exponential back-off,
   * and the wave goes on with the others. A conflict is not a failure (see WaveWrites). Anything
   * else says nothing about the owner (the API server unreachable or overloaded, a timeout,
   * leadership lost): it fails the step, which the queue retries with its own back-off.
   */
  private async writeOwner(
    step: Step,
    ref: OwnerRef,
    nowMs: number,
    act: (w: Workload) => Promise<void>,
  ): Promise<void> {
    const key = ownerKey(ref);
    const w = this.deps.view.workload(key);
    const failed = this.failures.get(key);
    if (!w || (failed && failed.untilMs > nowMs)) return;
    try {
      await act(w);
      this.failures.delete(key);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      step.refusals += 1;
      await this.refused(step, w, err, nowMs);
    }
  }

  private async refused(step: Step, workload: Workload, err: unknown, nowMs: number) {
    const { deps } = this;
    const key = ownerKey(refOfWorkload(workload));
    const count = (this.failures.get(key)?.count ?? 0) + 1;
    const delayMs = backoffDelay({
      baseMs: OWNER_BACKOFF_BASE_MS,
      capMs: OWNER_BACKOFF_CAP_MS,
      jitter: 0,
      failures: count,
      random: Math.random,
    });
    this.failures.set(key, { count, untilMs: nowMs + delayMs });
    const message = apiErrorMessage(err);
    deps.metrics.writeFailures.inc({ resource: WORKLOAD_RESOURCES[workload.kind] });
    deps.logger.warn('write refused; trying this owner again later, the wave goes on', {
      owner: key,
      error: message,
      retryInMs: delayMs,
    });
    await deps.events.record({
      subject: workloadSubject(workload),
      type: 'Warning',
      reason: 'RestartFailed',
      message: `the API server refused Outrigger's patch: ${message}; retrying with back-off`,
      once: `${step.config.revision} ${message}`,
    });
  }

  private async restart(
    step: Step,
    orders: readonly WaveOrder[],
    waves: readonly PlannedWave[],
    nowMs: number,
  ): Promise<void> {
    const [first] = orders;
    if (!first) return;
    await this.writeOwner(step, first.order.owner, nowMs, (workload) =>
      restartOwner(this.deps, step.writes, { workload, orders, waves }, nowMs),
    );
  }

  private async complete(step: Step, workload: Workload, wave: WaveOf) {
    const rv = workload.metadata?.resourceVersion;
    const restarted = workload.metadata?.annotations?.[wave.keys.restartedRevision] ?? '';
    const body = completionPatch(restarted, wave.keys);
    const written = await step.writes.patchWorkload(
      workload,
      rv ? withResourceVersion(body, rv) : body,
    );
    if (written)
      this.deps.logger.info('rollout complete', {
        owner: ownerKey(refOfWorkload(workload)),
        set: wave.keys.set,
      });
  }

  private wouldRestart(wave: WaveOf, entry: WaveReportEntry): void {
    const owner = ownerKey(entry.owner);
    const key = `${owner} ${wave.keys.set}`;
    const said = `${wave.revision} ${entry.reason}`;
    if (this.dryRunReported.get(key)?.said === said) return;
    this.dryRunReported.set(key, { owner, said });
    this.deps.logger.info('dry-run: would restart', {
      owner: ownerKey(entry.owner),
      set: wave.keys.set,
      reason: entry.reason,
      detail: entry.detail,
    });
  }

  /** Events for owners left alone for a reason an admin should see; once per revision. */
  private async report(step: Step, wave: WaveOf, entries: readonly WaveReportEntry[]) {
    const { config, title, revision } = wave;
    for (const e of entries) {
      if (e.action === 'restart' && config.rollout.mode === 'dry-run') this.wouldRestart(wave, e);
      const w = this.deps.view.workload(ownerKey(e.owner));
      const reported = reportEvent(e, config);
      if (!w || !reported) continue;
      await this.deps.events.record({
        subject: workloadSubject(w),
        type: reported.type,
        reason: reported.reason,
        message: `${e.detail} (${title})`,
        once: `${wave.keys.set} ${revision} ${e.reason}`,
      });
    }
  }
}

/** What of a report entry the step keeps: its Event or dry-run line, a restart it may join. */
function keep(
  kept: { report: WaveReportEntry[]; joinable: Joinable[] },
  e: WaveReportEntry,
  wave: WaveOf,
  joins: ReadonlyMap<string, Joinable>,
): void {
  const { rollout } = wave.config;
  if ((rollout.mode === 'dry-run' && e.action === 'restart') || reportEvent(e, wave.config))
    kept.report.push(e);
  const join = joins.get(ownerKey(e.owner));
  if (join && e.action === 'wait' && e.reason === 'budget' && !e.canary && rollout.mode === 'auto')
    kept.joinable.push(join);
}
