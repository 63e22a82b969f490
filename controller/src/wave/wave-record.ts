// The wave's record on the configuration ConfigMap: its stop and an admin's resume, the stage it
// reached and the last good revision, and the Events that say so (on the ConfigMap, and on the
// owner that stopped it). Every write carries the ConfigMap's resourceVersion as the step read
// it, so a record decided on a stale cache fails instead of undoing a newer one.

import type { ObjectRef } from '@outrigger/kube';
import {
  clearStopPatch,
  formatTime,
  ownerKey,
  resumePatch,
  stagePatch,
  waveStopPatch,
} from '@outrigger/shared';
import { workloadSubject, type EventRecorder, type EventSubject } from '../events';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import type { ActedOn, StepContext, WaveOf, WaveView } from './wave-contract';

/** What the record is built with, once. */
export interface WaveRecordDeps {
  configMapRef: ObjectRef;
  view: Pick<WaveView, 'workload'>;
  events: EventRecorder;
  metrics: ControllerMetrics;
  logger: Logger;
}

export class WaveRecord {
  constructor(private readonly deps: WaveRecordDeps) {}

  /**
   * The plan's resume, stop or cleared stop; false when the write met a stale cache. The
   * restarts of a plan assume its stop or resume is recorded: without it, none is made.
   */
  async stopOrResume(
    plan: ActedOn,
    step: StepContext,
    wave: WaveOf,
    nowMs: number,
  ): Promise<boolean> {
    if (plan.resume) return this.resume(step, wave, nowMs);
    if (plan.stop) return this.stop(plan, step, wave, nowMs);
    return !plan.clearStop || this.patch(step, clearStopPatch(wave.keys));
  }

  /** A patch at the resourceVersion the step holds; the next wave's record writes on from it. */
  private async patch(step: StepContext, body: Record<string, unknown>): Promise<boolean> {
    const rv = step.configMap?.metadata?.resourceVersion;
    const written = await step.writes.patchConfigMap(this.deps.configMapRef, body, rv);
    if (written) step.configMap = written;
    return written !== undefined;
  }

  private subject(step: StepContext): EventSubject {
    const { namespace, name } = this.deps.configMapRef;
    return {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace,
      name,
      uid: step.configMap?.metadata?.uid,
    };
  }

  private async stop(
    plan: ActedOn,
    step: StepContext,
    wave: WaveOf,
    nowMs: number,
  ): Promise<boolean> {
    const stop = plan.stop;
    if (!stop) return true;
    const { deps } = this;
    const body = waveStopPatch({ stop, revision: wave.revision, nowMs, keys: wave.keys });
    const ok = await this.patch(step, body);
    if (!ok) return false;
    if (stop.reason !== 'proxy-failing') deps.metrics.stalls.inc({ reason: stop.reason });
    deps.metrics.gateFailures.inc({ reason: stop.reason });
    const resume = `${deps.configMapRef.namespace}/${deps.configMapRef.name} ${wave.keys.resume}=now`;
    deps.logger.warn('the wave stopped: an owner failed the health gate', {
      owner: ownerKey(stop.owner),
      set: wave.keys.set,
      reason: stop.reason,
      detail: stop.detail,
      resume: `kubectl annotate configmap -n ${resume.replace('/', ' ')}`,
    });
    const w = deps.view.workload(ownerKey(stop.owner));
    const message = `${stop.reason}: ${stop.detail}. The wave to ${wave.title} is stopped until the configuration changes or an admin resumes it (annotate ConfigMap ${resume})`;
    const rollback =
      wave.config.rollout.onFailure === 'rollback'
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
      subject: this.subject(step),
      type: 'Warning',
      reason: 'WaveStopped',
      message: `${ownerKey(stop.owner)} ${message}.${rollback}`,
      once: null,
    });
    return true;
  }

  /** Says once per revision and opening that restarts wait for a maintenance window. */
  async windowWait(plan: ActedOn, step: StepContext, wave: WaveOf): Promise<void> {
    const { deps } = this;
    const opens = plan.nextWindowMs;
    if (!plan.windowClosed) return;
    const when =
      opens === undefined
        ? 'no window opens within a week'
        : `the next opens at ${formatTime(opens)}`;
    await deps.events.record({
      subject: this.subject(step),
      type: 'Normal',
      reason: 'WaveWaiting',
      message: `restarts of the wave to ${wave.title} wait for a maintenance window: ${when}`,
      once: `${wave.keys.set} ${wave.revision} ${opens ?? 'never'}`,
    });
  }

  /** Records a stage the wave reached (soaking, rolling, complete) on the ConfigMap. */
  async stage(plan: ActedOn, step: StepContext, wave: WaveOf): Promise<void> {
    const { deps } = this;
    const ok = await this.patch(step, stagePatch(plan.record, plan.lastGood, wave.keys));
    if (!ok) return;
    deps.logger.info('wave stage', {
      set: wave.keys.set,
      revision: wave.revision,
      stage: plan.stage,
      detail: plan.stageDetail,
      lastGood: plan.lastGood ?? null,
    });
    await deps.events.record({
      subject: this.subject(step),
      type: 'Normal',
      reason: plan.stage === 'complete' ? 'WaveComplete' : 'WaveStage',
      message: `${wave.title}: ${plan.stage}: ${plan.stageDetail}`,
      once: `${wave.keys.set} ${wave.revision} ${plan.stage}`,
    });
  }

  private async resume(step: StepContext, wave: WaveOf, nowMs: number): Promise<boolean> {
    const { deps } = this;
    const ok = await this.patch(step, resumePatch(nowMs, wave.keys));
    if (!ok) return false;
    deps.logger.info('the wave resumed by the admin', {
      set: wave.keys.set,
      revision: wave.revision,
    });
    await deps.events.record({
      subject: this.subject(step),
      type: 'Normal',
      reason: 'WaveResumed',
      message: `the wave to ${wave.title} resumed`,
      once: null,
    });
    return true;
  }
}
