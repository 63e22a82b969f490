// WaveStep, the wave reconcile: one key for the whole cluster, because the budget of rollouts
// at once is cluster-wide and the wave's stop holds for every owner. It reads the owners as the
// index last assessed them (owner-index.ts: only those an event touched are assessed again) and
// plans the wave over those that can matter (shared/src/quiet-owners.ts, pure), then carries the
// plan out: restarts, completions, the wave's record on the ConfigMap (wave-record.ts), Events
// and metrics. Running it twice does nothing the second time: every decision is read back from the
// cluster, and each write carries the resourceVersion it was decided on, so a write from a stale
// cache fails instead of repeating.

import {
  apiErrorMessage,
  backoffDelay,
  isConflict,
  isRefusal,
  WORKLOAD_RESOURCES,
  workloadClient,
} from '@outrigger/kube';
import { FIELD_MANAGER, RESTARTED_REVISION } from '@outrigger/shared';
import type { ConfigInForce } from './config-map';
import { workloadSubject } from './events';
import type { AssessedFleet } from './owner-index';
import {
  completionPatch,
  earliest,
  ownerKey,
  planFleet,
  readWave,
  restartPatch,
  type OwnerAssessment,
  type OwnerRef,
  type WaveReportEntry,
  type RestartOrder,
  type WavePlan,
} from '@outrigger/shared';
import type { Result } from './queue';
import { slimWorkload } from './slim';
import { deleteStuckPod, type ForcedRollbackDeps } from './forced-rollback';
import { MIN_RECHECK_MS, OWNER_BACKOFF_BASE_MS, OWNER_BACKOFF_CAP_MS } from './owner-backoff';
import { RESTART_EVENT, reportEvent, restartMessage } from './wave-messages';
import { WaveRecord, withResourceVersion } from './wave-record';
import type { ActedOn, WaveDeps, WaveView } from './wave-contract';
import type { Workload } from '@outrigger/shared';

export const WAVE_KEY = 'Wave';

function refOfWorkload(workload: Workload): OwnerRef {
  return {
    namespace: workload.metadata?.namespace ?? '',
    kind: workload.kind,
    name: workload.metadata?.name ?? '',
  };
}

/** One wave step: what a reconcile of WAVE_KEY does. */
export class WaveStep {
  private conflicts = 0;
  private refusals = 0;
  /** The report's detail of each owner this step restarts, for its log line and Event. */
  private readonly details = new Map<string, string>();

  constructor(
    private readonly deps: WaveDeps,
    private readonly view: WaveView,
    private readonly config: ConfigInForce,
  ) {}

  /** A forced rollback's delete writes the step's own way. */
  private get forcing(): ForcedRollbackDeps {
    return {
      ...this.deps,
      write: (what, call) => this.write(what, call),
      patchWorkload: (workload, body) => this.patchWorkload(workload, body),
    };
  }

  async run(): Promise<Result> {
    const { deps, view, config } = this;
    const nowMs = deps.clock();
    const fleet = view.assess(nowMs);
    for (const key of deps.failures.keys()) if (!view.workload(key)) deps.failures.delete(key);
    const input = {
      // An owner whose restart was refused waits out its back-off: it holds no slot the next
      // owner could use, and a canary backing off still holds the canary stage.
      backingOff: new Set(
        fleet.active.filter((a) => this.backingOff(a, nowMs)).map((a) => ownerKey(a.owner)),
      ),
      revision: config.revision,
      rollout: config.config.rollout,
      wave: readWave(view.configMap?.metadata?.annotations),
      nowMs,
      podsSynced: view.podsSynced,
    };
    // Early in a wave the plan reports on every owner still due, thousands of them, and the
    // writes below take seconds: only what is acted on is kept across them, so the rest of the
    // plan dies young instead of reaching V8's old generation (docs/benchmarks.md, "Controller").
    let plan = this.actedOn(planFleet(input, fleet));
    if (plan.restart.some((o) => o.kind === 'heal') && !(await deps.webhookReady()))
      plan = this.actedOn(planFleet({ ...input, webhookReady: false }, fleet));
    this.observe(fleet, plan);
    await this.carryOut(plan, nowMs);
    return this.next(plan.recheckAtMs, nowMs);
  }

  /** The plan cut to what carryOut writes, logs or reports. */
  private actedOn(plan: WavePlan): ActedOn {
    const restarting = new Set(plan.restart.map((o) => ownerKey(o.owner)));
    const dryRun = this.config.config.rollout.mode === 'dry-run';
    const report: WaveReportEntry[] = [];
    let windowClosed = false;
    let judging = false;
    this.details.clear();
    for (const e of plan.report) {
      const key = ownerKey(e.owner);
      if (restarting.has(key)) this.details.set(key, e.detail);
      if (e.reason === 'window-closed') windowClosed = true;
      // A forced rollback reads the pods at the failed revision, which is the current one.
      if (e.gate !== undefined || e.reason === 'forced-rollback') judging = true;
      if ((dryRun && e.action === 'restart') || reportEvent(e, this.config.config)) report.push(e);
    }
    // A new object with the plan's fields and the cut report: the plan's own report dies here.
    // A rollback still rolling may need a forced rollback, which reads the pods it left: widen.
    if (plan.stage === 'rolling-back') judging = true;
    return { ...plan, report, windowClosed, judging };
  }

  /**
   * When to plan again. A refused owner held a slot in this step's plan, or a write met a stale
   * cache: plan again without it, or with the cache caught up. Otherwise at the earliest time the
   * plan may change by itself (a deadline, a back-off running out); anything else that can
   * change it (a rollout completing, a slot freeing, an admin's resume) arrives as a watch event.
   * `plannedAtMs` is the time the plan was made at, which decided who was backing off.
   */
  private next(recheckAtMs: number | undefined, plannedAtMs: number): Result {
    if (this.refusals > 0 || this.conflicts > 0) return { requeueAfterMs: MIN_RECHECK_MS };
    const recheck = earliest([recheckAtMs, this.retryAtMs(plannedAtMs)]);
    if (recheck === undefined) return { done: true };
    return { requeueAfterMs: Math.max(MIN_RECHECK_MS, recheck - this.deps.clock()) };
  }

  private backingOff(assessment: OwnerAssessment, nowMs: number): boolean {
    const failed = this.deps.failures.get(ownerKey(assessment.owner));
    return failed !== undefined && failed.untilMs > nowMs && !assessment.inFlight;
  }

  /**
   * The earliest end of a back-off that kept its owner out of the plan made at `plannedAtMs`.
   * One that had run out by then is no time to wait for: its owner was a candidate in that plan,
   * and if it was not restarted, what holds it (the budget, the wave's stop, the mode) changes
   * by an event.
   */
  private retryAtMs(plannedAtMs: number): number | undefined {
    const running = [...this.deps.failures.values()].filter((f) => f.untilMs > plannedAtMs);
    return earliest(running.map((f) => f.untilMs));
  }

  private observe(fleet: AssessedFleet, plan: ActedOn): void {
    const { metrics } = this.deps;
    metrics.setOwnerStates(fleet.states);
    metrics.waveStopped.set(plan.stopped ? 1 : 0);
    metrics.setStage(plan.stage);
    this.deps.onJudging(plan.judging);
  }

  private async carryOut(plan: ActedOn, nowMs: number) {
    // When the stop or resume met a stale cache, none of the restarts is made: the step runs
    // again once the watch caught up.
    const record = new WaveRecord({
      deps: this.deps,
      view: this.view,
      config: this.config,
      write: (what, call) => this.write(what, call),
    });
    if (!(await record.stopOrResume(plan, nowMs))) return;
    if (plan.record || plan.lastGood) await record.stage(plan);
    await record.windowWait(plan);
    for (const owner of plan.complete) await this.writeOwner(owner, nowMs, (w) => this.complete(w));
    for (const order of plan.restart)
      await this.writeOwner(order.owner, nowMs, (w) => this.restart(order, w, nowMs));
    for (const deletion of plan.deletePods)
      await this.writeOwner(deletion.owner, nowMs, (w) =>
        deleteStuckPod(this.forcing, deletion, w, nowMs),
      );
    await this.report(plan.report);
  }

  /**
   * One owner's write, kept from failing the wave: an owner whose patch is refused (a policy
   * webhook, a quota, a validation error) gets a Warning Event and an exponential back-off,
   * and the wave goes on with the others. A conflict is not a failure (see write()). Anything
   * else says nothing about the owner (the API server unreachable or overloaded, a timeout,
   * leadership lost): it fails the step, which the queue retries with its own back-off.
   */
  private async writeOwner(
    ref: OwnerRef,
    nowMs: number,
    act: (w: Workload) => Promise<void>,
  ): Promise<void> {
    const key = ownerKey(ref);
    const w = this.view.workload(key);
    const failed = this.deps.failures.get(key);
    if (!w || (failed && failed.untilMs > nowMs)) return;
    try {
      await act(w);
      this.deps.failures.delete(key);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      await this.refused(w, key, err, nowMs);
    }
  }

  private async refused(
    workload: Workload,
    key: string,
    err: unknown,
    nowMs: number,
  ): Promise<void> {
    const { deps } = this;
    this.refusals += 1;
    const count = (deps.failures.get(key)?.count ?? 0) + 1;
    const delayMs = backoffDelay({
      baseMs: OWNER_BACKOFF_BASE_MS,
      capMs: OWNER_BACKOFF_CAP_MS,
      jitter: 0,
      failures: count,
      random: Math.random,
    });
    deps.failures.set(key, { count, untilMs: nowMs + delayMs });
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
      once: `${this.config.revision} ${message}`,
    });
  }

  /** Runs one write; a conflict (stale cache) is counted and left for the requeue. */
  private async write<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      if (isConflict(err)) {
        this.conflicts += 1;
        this.deps.logger.debug('write refused on a stale resourceVersion; deciding again', {
          object: what,
        });
        return undefined;
      }
      throw err;
    }
  }

  private async patchWorkload(workload: Workload, body: object): Promise<Workload | undefined> {
    const { deps } = this;
    await deps.acquireWrite();
    deps.onWrite(WORKLOAD_RESOURCES[workload.kind], 'patch');
    const args = {
      name: workload.metadata?.name ?? '',
      namespace: workload.metadata?.namespace ?? '',
      body,
      fieldManager: FIELD_MANAGER,
    };
    const what = `${workload.kind} ${args.namespace}/${args.name}`;
    const written = await this.write(what, () =>
      workloadClient(deps.api, workload.kind).mergePatch(args),
    );
    if (!written) return undefined;
    const after = slimWorkload(workload.kind)(written);
    deps.onWritten(workload, after);
    return after;
  }

  private async restart(order: RestartOrder, workload: Workload, nowMs: number) {
    const { deps } = this;
    const written = await this.patchWorkload(workload, restartPatch({ workload, order, nowMs }));
    if (!written) return;
    deps.metrics.restarts.inc({ kind: order.kind });
    if (order.kind === 'rollback') deps.metrics.rollbacks.inc();
    const detail = this.detailOf(order.owner);
    deps.logger.info('restarted', {
      owner: ownerKey(order.owner),
      kind: order.kind,
      revision: order.revision,
      detail,
    });
    await deps.events.record({
      subject: workloadSubject(workload),
      type: 'Normal',
      reason: RESTART_EVENT[order.kind],
      message: restartMessage(order, detail),
      once: null,
    });
  }

  private detailOf(owner: OwnerRef): string {
    return this.details.get(ownerKey(owner)) ?? '';
  }

  private async complete(workload: Workload) {
    const rv = workload.metadata?.resourceVersion;
    const body = completionPatch(workload.metadata?.annotations?.[RESTARTED_REVISION] ?? '');
    const written = await this.patchWorkload(workload, rv ? withResourceVersion(body, rv) : body);
    if (written)
      this.deps.logger.info('rollout complete', { owner: ownerKey(refOfWorkload(workload)) });
  }

  private wouldRestart(entry: WaveReportEntry): void {
    const key = `${ownerKey(entry.owner)} ${this.config.revision} ${entry.reason}`;
    if (this.deps.dryRunReported.has(key)) return;
    this.deps.dryRunReported.add(key);
    this.deps.logger.info('dry-run: would restart', {
      owner: ownerKey(entry.owner),
      reason: entry.reason,
      detail: entry.detail,
    });
  }

  /** Events for owners left alone for a reason an admin should see; once per revision. */
  private async report(entries: readonly WaveReportEntry[]) {
    const { deps, config } = this;
    for (const e of entries) {
      if (e.action === 'restart' && config.config.rollout.mode === 'dry-run') this.wouldRestart(e);
      const w = this.view.workload(ownerKey(e.owner));
      const reported = reportEvent(e, config.config);
      if (!w || !reported) continue;
      await deps.events.record({
        subject: workloadSubject(w),
        type: reported.type,
        reason: reported.reason,
        message: `${e.detail} (revision ${config.revision})`,
        once: `${config.revision} ${e.reason}`,
      });
    }
  }
}
