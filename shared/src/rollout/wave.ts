// The wave planner, with no I/O and no clock: which owners a wave restarts now. Each owner's
// verdict (wave-verdict.ts), the stage it allows (wave-stage.ts), the maintenance windows and
// the budget of rollouts at once decide it. The controller carries the plan out; `outrigger
// status` shows it.

import type { RolloutConfig } from '../config/config';
import { earliest, formatTime } from '../kubernetes/time';
import { finishRollbacks, type PodDeletion } from './forced-rollback-plan';
import type { GateVerdict } from './gate';
import { AUTO_RESTART, DISABLED } from '../names';
import { windowState } from './windows';
import {
  decideStage,
  type StageDecision,
  type StageOwner,
  type StageRecord,
  type WaveStage,
} from './wave-stage';
import {
  compareOwners,
  ownerKey,
  type OwnerAssessment,
  type OwnerRef,
  type OwnerState,
  type RestartKind,
} from './owner-state';
import type { StopDecision, WaveState, WaveStop } from './wave-stop';
import { gateOf, gatedVerdict, inWave, verdict, type Context, type Verdict } from './wave-verdict';
import type { Action, ReportReason } from './wave-actions';

export interface WaveReportEntry {
  owner: OwnerRef;
  state: OwnerState;
  action: Action;
  reason: ReportReason;
  detail: string;
  /** The health gate, for owners the wave restarted. */
  gate: GateVerdict | undefined;
  /** The revision the template is stamped with. */
  pinned: string | undefined;
  canary: boolean;
}

export interface RestartOrder {
  owner: OwnerRef;
  kind: RestartKind;
  /** The revision to record (NO_REVISION when shedding; the last good one when rolling back). */
  revision: string;
  /** Restarted as one of the wave's canaries. */
  canary?: boolean;
  /** For a rollback: the revision it leaves. */
  from?: string;
}

export interface WaveInput {
  owners: readonly OwnerAssessment[];
  revision: string;
  rollout: RolloutConfig;
  wave: WaveState;
  nowMs: number;
  /** Whether the webhook answers its readiness probe; heals wait for it (default true). */
  webhookReady?: boolean;
  /** Whether the pods at the current revision are listed; gates wait for them (default true). */
  podsSynced?: boolean;
  /**
   * Owners (by ownerKey) whose last write the API server refused, backing off: a restart they
   * are due waits, and counts as waiting (a canary backing off holds the canary stage).
   */
  backingOff?: ReadonlySet<string>;
}

export interface WavePlan {
  /** Owners to restart now (auto mode only). */
  restart: RestartOrder[];
  /** Followed rollouts now complete: record COMPLETED_REVISION (auto mode only). */
  complete: OwnerRef[];
  /** Pods to delete to finish a StatefulSet's rollback (auto mode, forceRollback on). */
  deletePods: PodDeletion[];
  /** A new stop to record on the ConfigMap, with an Event and a metric (auto mode only). */
  stop: StopDecision | undefined;
  /** Consume the admin's resume: clear the stop and record RESUMED_AT (auto mode only). */
  resume: boolean;
  /**
   * A stop recorded for another revision: the configuration has changed since, which lifts it,
   * so it is removed; otherwise a rollback to that revision would find the wave stopped.
   */
  clearStop: boolean;
  /** Whether the wave is stopped once this plan is carried out. */
  stopped: boolean;
  /** One entry per owner, in the stable order; in dry-run, what auto would do. */
  report: WaveReportEntry[];
  /** The earliest time the plan may change with nothing else changing (a deadline, a back-off). */
  recheckAtMs: number | undefined;
  /** The wave's stage once this plan is carried out, and one line on it. */
  stage: WaveStage;
  stageDetail: string;
  /** A stage and the last good revision to record on the ConfigMap (auto mode only). */
  record: StageRecord | undefined;
  lastGood: string | undefined;
  /** When restarts may next start, when a maintenance window holds them now. */
  nextWindowMs: number | undefined;
}

interface Judged {
  a: OwnerAssessment;
  v: Verdict;
  /** The health gate, for an owner its wave restarted. */
  g: GateVerdict | undefined;
}

type HoldReason = Extract<
  ReportReason,
  'wave-stopped' | 'manual-mode' | 'budget' | 'window-closed'
>;

/** Why a candidate may not start now, or undefined when it may. */
function holdOf(
  input: WaveInput,
  kind: RestartKind,
  open: { stopped: boolean; window: boolean; slots: number },
): { action: Action; reason: HoldReason } | undefined {
  // A rollback is how a stopped wave is undone, and it undoes a risk: no stop or window holds it.
  if (open.stopped && kind !== 'rollback') return { action: 'wait', reason: 'wave-stopped' };
  if (input.rollout.mode === 'manual') return { action: 'skip', reason: 'manual-mode' };
  if (!open.window && (kind === 'rollout' || kind === 'shed'))
    return { action: 'wait', reason: 'window-closed' };
  if (open.slots <= 0) return { action: 'wait', reason: 'budget' };
  return undefined;
}

function holdDetail(reason: HoldReason, nextWindowMs: number | undefined): string {
  switch (reason) {
    case 'wave-stopped':
      return 'the wave is stopped until the configuration changes or an admin resumes it';
    case 'manual-mode':
      return 'mode manual: `outrigger restart` restarts it';
    case 'budget':
      return 'the budget of rollouts at once is spent';
    case 'window-closed':
      return nextWindowMs === undefined
        ? 'outside every maintenance window'
        : `outside the maintenance windows; the next opens at ${formatTime(nextWindowMs)}`;
  }
}

/**
 * Turns restart candidates, in order, into restarts or waits: the wave's stop, the mode, the
 * maintenance window, then the budget, which only restarts of ours still rolling use up: a
 * rollout someone else started or one that stalled would otherwise hold a slot for as long as
 * it lasts. A restart that replaces a rollout of ours still rolling keeps the slot it holds.
 */
function admit(
  judged: readonly Judged[],
  input: WaveInput,
  stopped: boolean,
  window: { open: boolean; nextOpenMs?: number },
): Judged[] {
  let slots = input.rollout.maxConcurrent - judged.filter(({ a }) => a.inFlight && !a.stall).length;
  return judged.map((j) => {
    const { a, v, g } = j;
    if (!v.candidate) return j;
    // Backing off after a refused write, it would not be written: it takes no slot (a rollback
    // the stage ordered for it included), and the next owner's restart may use it.
    if (input.backingOff?.has(ownerKey(a.owner))) return backingOff(j);
    // A restart that replaces a rollout of ours still rolling (a rollback, or a newer revision)
    // adds no rollout: it keeps the slot that rollout holds, and no budget holds it, not even one
    // lowered below what rolls now (with every slot held by canaries that fail, none would free).
    const replaces =
      a.inFlight && !a.stall && (v.candidate === 'rollback' || a.restarted?.revision !== a.target);
    const held = holdOf(input, v.candidate, {
      stopped,
      window: window.open,
      slots: replaces ? Number.POSITIVE_INFINITY : slots,
    });
    if (!held) {
      if (!replaces) slots -= 1;
      return j;
    }
    const why = holdDetail(held.reason, window.nextOpenMs);
    const recheckAtMs = held.reason === 'window-closed' ? window.nextOpenMs : undefined;
    return {
      a,
      g,
      v: {
        action: held.action,
        reason: held.reason,
        detail: `${v.detail}; ${why}`,
        recheckAtMs,
        canary: v.canary,
      },
    };
  });
}

function restartsOf(judged: readonly Judged[]): RestartOrder[] {
  return judged.flatMap(({ a, v }) => {
    if (!v.candidate) return [];
    const order: RestartOrder = {
      owner: a.owner,
      kind: v.candidate,
      revision: v.revision ?? a.target,
    };
    if (v.canary) order.canary = true;
    if (v.candidate === 'rollback') order.from = a.target;
    return [order];
  });
}

function stopOf(stopper: Judged | undefined): StopDecision | undefined {
  if (!stopper) return undefined;
  const stall = stopper.a.stall;
  if (stall && stopper.v.reason === stall.reason)
    return { owner: stopper.a.owner, reason: stall.reason, detail: stall.detail };
  const reason = stopper.v.reason === 'proxy-failing' ? 'proxy-failing' : 'deadline-exceeded';
  return { owner: stopper.a.owner, reason, detail: stopper.v.detail };
}

function stageOwner({ a, v, g }: Judged, revision: string): StageOwner {
  return {
    key: ownerKey(a.owner),
    canaryEligible: a.canaryEligible,
    canary: a.canary,
    inWave: inWave(a),
    gate: g,
    candidate: v.candidate === 'rollback' ? undefined : v.candidate,
    waiting: v.action === 'wait' && a.due?.kind === 'rollout',
    busy:
      v.action === 'wait' && (v.reason === 'rollout-in-progress' || v.reason === 'write-refused'),
    following: a.following,
    rollingBack: a.inFlight && a.rolledBackFrom === revision && a.restarted?.revision !== a.target,
    autoRestartDisabled: a.autoRestartDisabled,
  };
}

/** What the stage holds back, starts as a canary, or rolls back. */
function applyStage(judged: readonly Judged[], stage: StageDecision): Judged[] {
  const [rollback, kept] = [new Set(stage.rollback?.keys), new Set(stage.rollback?.kept)];
  const to = stage.rollback?.to ?? '';
  return judged.map((j) => {
    const { a, v, g } = j;
    const key = ownerKey(a.owner);
    if (rollback.has(key)) {
      const detail = `the wave to ${a.target} failed its health gate; rolling back to ${to}`;
      return {
        a,
        g,
        v: { action: 'restart', reason: 'rollback', detail, candidate: 'rollback', revision: to },
      };
    }
    if (kept.has(key) && !v.stops) {
      const detail = `the wave to ${a.target} failed its health gate; not rolled back to ${to}, as ${AUTO_RESTART}=${DISABLED}: roll it back by hand`;
      return { a, g, v: { action: 'skip', reason: 'auto-restart-disabled', detail } };
    }
    if (stage.held.has(key))
      return {
        a,
        g,
        v: {
          action: 'wait',
          reason: 'canary-stage',
          detail: `${v.detail}; held for the canary stage: ${stage.detail}`,
        },
      };
    if (stage.canaries.has(key)) return { a, g, v: { ...v, canary: true } };
    return j;
  });
}

/** A stop recorded for a revision that is no longer current. */
const isStale = (stop: WaveStop | undefined, revision: string): boolean =>
  stop !== undefined && stop.revision !== revision;

type Writes = Pick<
  WavePlan,
  'restart' | 'complete' | 'deletePods' | 'stop' | 'resume' | 'clearStop' | 'record' | 'lastGood'
>;

/** What manual and dry-run modes write: nothing. */
const NO_WRITES: Writes = {
  restart: [],
  complete: [],
  deletePods: [],
  stop: undefined,
  resume: false,
  clearStop: false,
  record: undefined,
  lastGood: undefined,
};

/** A candidate waiting out the back-off of a write the API server refused. */
function backingOff({ a, v, g }: Judged): Judged {
  const detail = `${v.detail}; the API server refused its last patch, tried again after a back-off`;
  return { a, g, v: { action: 'wait', reason: 'write-refused', detail, canary: v.canary } };
}

/** Each owner's verdict and, for those the wave restarted, its gate. */
function judge(owners: readonly OwnerAssessment[], input: WaveInput, resuming: boolean): Judged[] {
  const ctx: Context = {
    rollout: input.rollout,
    nowMs: input.nowMs,
    resumedAtMs: resuming ? input.nowMs : input.wave.resumedAtMs,
    webhookReady: input.webhookReady ?? true,
  };
  const podsSynced = input.podsSynced ?? true;
  // A completed wave judges no one any more: its owners passed, and a controller that kept
  // judging them would have to keep every pod of the revision in view for ever.
  // Nor does a stopped one: its verdict is in, and the pod watch need not stay wide for it.
  const record = input.wave.stage;
  const complete = record?.revision === input.revision && record.stage === 'complete';
  const stopped = !resuming && input.wave.stopped?.revision === input.revision;
  const judging = !complete && !stopped;
  return owners.map((a): Judged => {
    const g = judging ? gateOf(a, ctx, podsSynced) : undefined;
    const v = gatedVerdict(verdict(a, ctx), g, a, ctx);
    const j: Judged = { a, g, v };
    return v.candidate && input.backingOff?.has(ownerKey(a.owner)) ? backingOff(j) : j;
  });
}

export function planWave(input: WaveInput): WavePlan {
  const { rollout, wave, revision, nowMs } = input;
  const auto = rollout.mode === 'auto';
  // Manual and dry-run write nothing, so they cannot consume a resume; dry-run still reports
  // as though it had, since that is what auto would do.
  const resuming = wave.resumeRequested && rollout.mode !== 'manual';
  const inForce = !resuming && wave.stopped?.revision === revision;
  const owners = [...input.owners].sort((x, y) => compareOwners(x.owner, y.owner));
  const considered = judge(owners, input, resuming);
  const stopper = considered.find(({ v }) => v.stops);
  const stopped = inForce || stopper !== undefined || considered.some(({ v }) => v.stopped);
  const stage = decideStage({
    revision,
    rollout,
    // A resume starts the wave's stages again: the canaries are judged anew.
    record: resuming ? undefined : wave.stage,
    lastGood: wave.lastGood,
    stopped,
    nowMs,
    owners: considered.map((j) => stageOwner(j, revision)),
  });
  const window = windowState(rollout.windows, nowMs);
  // Manual mode restarts nothing by itself, so it has no stages to hold owners back for.
  const staged = rollout.mode === 'manual' ? considered : applyStage(considered, stage);
  const admitted = admit(staged, input, stopped, window);
  const finished = finishRollbacks(admitted, rollout.forceRollback, input.podsSynced !== false);
  const judged = finished.judged;
  const writes: Writes = {
    restart: restartsOf(judged),
    complete: owners.filter((a) => a.completed).map((a) => a.owner),
    deletePods: finished.deletePods,
    // An in-force stop is already recorded; writing it again would be a write for nothing.
    stop: inForce ? undefined : stopOf(stopper),
    resume: resuming,
    clearStop: !resuming && isStale(wave.stopped, revision),
    record: stage.record,
    lastGood: stage.lastGood,
  };
  return {
    ...(auto ? writes : NO_WRITES),
    stopped,
    report: judged.map(({ a, v, g }) => ({
      owner: a.owner,
      state: a.state,
      action: v.action,
      reason: v.reason,
      detail: v.detail,
      gate: g,
      pinned: a.pinned,
      canary: a.canary || v.canary === true,
    })),
    recheckAtMs: earliest([...judged.map(({ v }) => v.recheckAtMs), stage.recheckAtMs]),
    stage: stage.stage,
    stageDetail: stage.detail,
    nextWindowMs: window.open ? undefined : window.nextOpenMs,
  };
}
