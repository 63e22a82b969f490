// The wave's record on the configuration ConfigMap: its stop and an admin's resume, the stage it
// reached and the last good revision, and the Events that say so (on the ConfigMap, and on the
// owner that stopped it). Every write carries the ConfigMap's resourceVersion as the step read
// it, so a record decided on a stale cache fails instead of undoing a newer one.

import {
  FIELD_MANAGER,
  clearStopPatch,
  formatTime,
  ownerKey,
  resumePatch,
  stagePatch,
  waveStopPatch,
} from '@outrigger/shared';
import type { ConfigInForce } from './config-map';
import { workloadSubject, type EventSubject } from './events';
import type { ActedOn, WaveDeps, WaveView } from './wave-contract';

export interface WaveRecordOptions {
  deps: WaveDeps;
  view: WaveView;
  config: ConfigInForce;
  /** Runs one write; undefined when it met a stale resourceVersion (WaveStep counts those). */
  write: <T>(what: string, call: () => Promise<T>) => Promise<T | undefined>;
}

export class WaveRecord {
  constructor(private readonly options: WaveRecordOptions) {}

  /**
   * The plan's resume, stop or cleared stop; false when the write met a stale cache. The
   * restarts of a plan assume its stop or resume is recorded: without it, none is made.
   */
  async stopOrResume(plan: ActedOn, nowMs: number): Promise<boolean> {
    if (plan.resume) return this.resume(nowMs);
    if (plan.stop) return this.stop(plan, nowMs);
    return !plan.clearStop || this.patch(clearStopPatch());
  }

  private async patch(body: Record<string, unknown>): Promise<boolean> {
    const { deps, view } = this.options;
    const rv = view.configMap?.metadata?.resourceVersion;
    await deps.acquireWrite();
    deps.onWrite('configmaps', 'patch');
    const { namespace, name } = deps.configMapRef;
    const written = await this.options.write(`ConfigMap ${namespace}/${name}`, () =>
      deps.api.patch(
        `/api/v1/namespaces/${namespace}/configmaps/${name}`,
        rv ? withResourceVersion(body, rv) : body,
        'merge',
        { fieldManager: FIELD_MANAGER },
      ),
    );
    return written !== undefined;
  }

  private subject(): EventSubject {
    const { namespace, name } = this.options.deps.configMapRef;
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace,
      name,
      uid: this.options.view.configMap?.metadata?.uid,
    };
  }

  private async stop(plan: ActedOn, nowMs: number): Promise<boolean> {
    const stop = plan.stop;
    if (!stop) return true;
    const { deps, config, view } = this.options;
    const ok = await this.patch(waveStopPatch({ stop, revision: config.revision, nowMs }));
    if (!ok) return false;
    if (stop.reason !== 'proxy-failing') deps.metrics.stalls.inc({ reason: stop.reason });
    deps.metrics.gateFailures.inc({ reason: stop.reason });
    deps.logger.warn('the wave stopped: an owner failed the health gate', {
      owner: ownerKey(stop.owner),
      reason: stop.reason,
      detail: stop.detail,
      resume: `kubectl annotate configmap -n ${deps.configMapRef.namespace} ${deps.configMapRef.name} outrigger.dev/resume=now`,
    });
    const w = view.workload(ownerKey(stop.owner));
    const message = `${stop.reason}: ${stop.detail}. The wave to revision ${config.revision} is stopped until the configuration changes or an admin resumes it (annotate ConfigMap ${deps.configMapRef.namespace}/${deps.configMapRef.name} outrigger.dev/resume=now)`;
    const rollback =
      config.config.rollout.onFailure === 'rollback'
        ? ' Owners it restarted roll back to the last good revision.'
        : '';
    const reason = stop.reason === 'proxy-failing' ? 'GateFailed' : 'RolloutStalled';
    if (w)
      await deps.events.record({
        subject: workloadSubject(w),
        type: 'Warning',
        reason,
        message,
        once: null,
      });
    await deps.events.record({
      subject: this.subject(),
      type: 'Warning',
      reason: 'WaveStopped',
      message: `${ownerKey(stop.owner)} ${message}.${rollback}`,
      once: null,
    });
    return true;
  }

  /** Says once per revision and opening that restarts wait for a maintenance window. */
  async windowWait(plan: ActedOn): Promise<void> {
    const { deps, config } = this.options;
    const opens = plan.nextWindowMs;
    if (!plan.windowClosed) return;
    const when =
      opens === undefined
        ? 'no window opens within a week'
        : `the next opens at ${formatTime(opens)}`;
    await deps.events.record({
      subject: this.subject(),
      type: 'Normal',
      reason: 'WaveWaiting',
      message: `restarts of the wave to revision ${config.revision} wait for a maintenance window: ${when}`,
      once: `${config.revision} ${opens ?? 'never'}`,
    });
  }

  /** Records a stage the wave reached (soaking, rolling, complete) on the ConfigMap. */
  async stage(plan: ActedOn): Promise<void> {
    const { deps, config } = this.options;
    const ok = await this.patch(stagePatch(plan.record, plan.lastGood));
    if (!ok) return;
    deps.logger.info('wave stage', {
      revision: config.revision,
      stage: plan.stage,
      detail: plan.stageDetail,
      lastGood: plan.lastGood ?? null,
    });
    await deps.events.record({
      subject: this.subject(),
      type: 'Normal',
      reason: plan.stage === 'complete' ? 'WaveComplete' : 'WaveStage',
      message: `revision ${config.revision}: ${plan.stage}: ${plan.stageDetail}`,
      once: `${config.revision} ${plan.stage}`,
    });
  }

  private async resume(nowMs: number): Promise<boolean> {
    const { deps, config } = this.options;
    const ok = await this.patch(resumePatch(nowMs));
    if (!ok) return false;
    deps.logger.info('the wave resumed by the admin', { revision: config.revision });
    await deps.events.record({
      subject: this.subject(),
      type: 'Normal',
      reason: 'WaveResumed',
      message: `the wave to revision ${config.revision} resumed`,
      once: null,
    });
    return true;
  }
}

/** A merge patch that applies only to the resourceVersion it was decided on. */
export function withResourceVersion(
  body: Record<string, unknown>,
  rv: string,
): Record<string, unknown> {
  const metadata = (body.metadata ?? {}) as Record<string, unknown>;
  return { ...body, metadata: { ...metadata, resourceVersion: rv } };
}
