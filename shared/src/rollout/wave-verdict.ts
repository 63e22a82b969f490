// What each owner gets from a wave, before the budget, the stage and the windows are applied:
// follow, restart, wait, skip or stop, and why; and the health gate of the owners the wave
// restarted, which stops the wave when it fails (shared/src/rollout/gate.ts judges one owner).

import type { RolloutConfig } from '../config/config';
import { earliest, formatTime } from '../kubernetes/time';
import { judgeGate, type GateVerdict } from './gate';
import { NO_REVISION } from '../names';
import type { OwnerAssessment, RestartKind } from './owner-state';
import type { Action, ReportReason } from './wave-actions';

export interface Verdict {
  action: Action;
  reason: ReportReason;
  detail: string;
  /** A restart that may start now, subject to the wave being open and the budget. */
  candidate?: RestartKind;
  /** Whether this owner stops the wave. */
  stops?: boolean;
  recheckAtMs?: number;
  /** The revision to restart to, when not the target (a rollback). */
  revision?: string;
  /** The restart is one of the wave's canaries. */
  canary?: boolean;
  /** The owner says the wave is stopped (it was rolled back from this revision). */
  stopped?: boolean;
}

export interface Context {
  rollout: RolloutConfig;
  nowMs: number;
  /** Stalls that began at or before this were acknowledged by a resume. */
  resumedAtMs: number | undefined;
  webhookReady: boolean;
}

/** How soon a heal held for an unanswering webhook is looked at again. */
export const WEBHOOK_RECHECK_MS = 5000;

function stalledVerdict(assessment: OwnerAssessment, ctx: Context): Verdict {
  if (!assessment.following || !assessment.stall) {
    const detail = `stalled, but not in a restart of ours to ${assessment.target}: ${assessment.detail}`;
    return assessment.due
      ? { action: 'wait', reason: 'rollout-stalled', detail }
      : { action: 'none', reason: 'rollout-stalled', detail };
  }
  if (ctx.resumedAtMs !== undefined && assessment.stall.sinceMs <= ctx.resumedAtMs)
    return { action: 'none', reason: 'stall-acknowledged', detail: assessment.stall.detail };
  return {
    action: 'stop',
    reason: assessment.stall.reason,
    detail: assessment.stall.detail,
    stops: true,
  };
}

function outdatedVerdict(assessment: OwnerAssessment): Verdict {
  const kind = assessment.due?.kind ?? 'rollout';
  if (assessment.restarted?.revision === assessment.target)
    return {
      action: 'skip',
      reason: 'already-restarted',
      detail: `restarted to ${assessment.target} once already; not again for this revision (${assessment.detail})`,
    };
  return {
    action: 'restart',
    reason: kind === 'shed' ? 'shed-sidecars' : 'outdated',
    detail: assessment.detail,
    candidate: kind,
  };
}

function escapedVerdict(assessment: OwnerAssessment, ctx: Context): Verdict {
  if (!ctx.rollout.healEscapedPods)
    return { action: 'skip', reason: 'heal-disabled', detail: assessment.detail };
  const healed = assessment.healed;
  if (healed?.revision === assessment.target)
    return {
      action: 'skip',
      reason: 'heal-did-not-help',
      detail: `healed once at this revision and ${assessment.detail}`,
    };
  // Back-off holds across revisions too, so a burst of configuration changes cannot turn
  // into a loop of restarts of the same owner.
  const until =
    healed?.atMs === undefined ? undefined : healed.atMs + ctx.rollout.healBackoffSeconds * 1000;
  if (until !== undefined && until > ctx.nowMs)
    return {
      action: 'wait',
      reason: 'heal-backoff',
      detail: `healed at ${formatTime(healed?.atMs ?? 0)}; next heal after ${formatTime(until)}`,
      recheckAtMs: until,
    };
  // A heal while the webhook is down makes pods that escape too, and spends the one heal of
  // this revision: wait until the webhook answers.
  if (!ctx.webhookReady)
    return {
      action: 'wait',
      reason: 'webhook-unavailable',
      detail: `${assessment.detail}; the webhook is not ready, so new pods would escape too`,
      recheckAtMs: ctx.nowMs + WEBHOOK_RECHECK_MS,
    };
  return { action: 'restart', reason: 'escaped', detail: assessment.detail, candidate: 'heal' };
}

/**
 * Rolled back from the current revision by its failed wave, with no resume since: the wave is
 * stopped for it, whether or not the stop's record on the ConfigMap is there to say so (a write
 * that conflicted, a replacement controller whose cache has not caught up).
 */
function rolledBackHere(assessment: OwnerAssessment, ctx: Context): boolean {
  if (assessment.rolledBackFrom !== assessment.target || assessment.target === NO_REVISION)
    return false;
  const at = assessment.restarted?.atMs ?? 0;
  return ctx.resumedAtMs === undefined || ctx.resumedAtMs < at;
}

export function verdict(assessment: OwnerAssessment, ctx: Context): Verdict {
  if (assessment.due && rolledBackHere(assessment, ctx))
    return {
      action: 'wait',
      reason: 'wave-stopped',
      detail: `rolled back from ${assessment.target} by its failed wave; waits for a resume or a new revision`,
      stopped: true,
    };
  return stateVerdict(assessment, ctx);
}

function stateVerdict(assessment: OwnerAssessment, ctx: Context): Verdict {
  switch (assessment.state) {
    case 'current':
      return { action: 'none', reason: 'current', detail: assessment.detail };
    case 'not-enabled':
      return { action: 'none', reason: 'not-enabled', detail: assessment.detail };
    case 'rolling':
      if (assessment.following)
        return {
          action: 'follow',
          reason: 'following',
          detail: assessment.detail,
          recheckAtMs: assessment.deadlineAtMs,
        };
      return {
        action: assessment.due ? 'wait' : 'none',
        reason: 'rollout-in-progress',
        detail: assessment.detail,
      };
    case 'stalled':
      return stalledVerdict(assessment, ctx);
    case 'on-delete':
      return { action: 'skip', reason: 'on-delete', detail: assessment.detail };
    case 'opted-out':
      return { action: 'skip', reason: 'auto-restart-disabled', detail: assessment.detail };
    case 'outdated':
      return outdatedVerdict(assessment);
    case 'escaped':
      return escapedVerdict(assessment, ctx);
  }
}

/** Restarted by the current wave and still stamped with its revision. */
export const inWave = (assessment: OwnerAssessment): boolean =>
  assessment.target !== NO_REVISION &&
  assessment.restarted?.revision === assessment.target &&
  assessment.pinned === assessment.target;

/**
 * The gate of an owner the wave restarted. A failure an admin's resume acknowledged (the
 * restart came before the resume) no longer counts: the admin chose to go on.
 */
export function gateOf(
  assessment: OwnerAssessment,
  ctx: Context,
  podsSynced: boolean,
): GateVerdict | undefined {
  if (!inWave(assessment)) return undefined;
  const g = pastDeadline(
    judgeGate({
      rollout: assessment.rollout,
      stall: assessment.stall,
      pods: assessment.revisionPods,
      podsSynced,
      desired: assessment.desiredPods,
    }),
    assessment,
    { ...ctx, podsSynced },
  );
  const acknowledged =
    ctx.resumedAtMs !== undefined && (assessment.restarted?.atMs ?? 0) <= ctx.resumedAtMs;
  if (g.state !== 'failed' || !acknowledged) return g;
  return { state: 'passed', detail: `${g.detail} (acknowledged by the resume)` };
}

/** When a pending gate fails: progressDeadlineSeconds after the restart, as a rollout would. */
const gateDeadlineMs = (assessment: OwnerAssessment, ctx: Context): number | undefined =>
  assessment.restarted?.atMs === undefined
    ? undefined
    : assessment.restarted.atMs + ctx.rollout.progressDeadlineSeconds * 1000 + 1;

/**
 * A gate still pending past the deadline fails: pods that never become Ready after a complete
 * rollout (unschedulable, not ready) would otherwise hold the wave, neither going on nor stopping.
 */
function pastDeadline(
  gateVerdict: GateVerdict,
  assessment: OwnerAssessment,
  ctx: Context & { podsSynced: boolean },
): GateVerdict {
  const at = gateDeadlineMs(assessment, ctx);
  // Pending because the controller has not listed the pods says nothing about the owner.
  if (gateVerdict.state !== 'pending' || !ctx.podsSynced || at === undefined || ctx.nowMs < at)
    return gateVerdict;
  const seconds = ctx.rollout.progressDeadlineSeconds;
  return {
    state: 'failed',
    detail: `not healthy ${seconds}s after the restart: ${gateVerdict.detail}`,
  };
}

/** A failed gate stops the wave, like a stalled rollout of ours; a pending one is looked at again by its deadline. */
export function gatedVerdict(
  v: Verdict,
  g: GateVerdict | undefined,
  assessment: OwnerAssessment,
  ctx: Context,
): Verdict {
  if (g?.state === 'pending')
    return { ...v, recheckAtMs: earliest([v.recheckAtMs, gateDeadlineMs(assessment, ctx)]) };
  if (g?.state !== 'failed' || v.stops) return v;
  const reason = g.trouble ? 'proxy-failing' : 'deadline-exceeded';
  return { action: 'stop', reason, detail: g.detail, stops: true };
}
