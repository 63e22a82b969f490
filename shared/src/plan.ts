// The controller's decisions, with no I/O and no clock: what state each owner is in, and which
// owners a wave restarts now (DESIGN section 4, "Upgrades" and "Healing"; issue 5). Everything
// they need to resume is read back from annotations the controller wrote into the cluster, so a
// replacement controller reaches the same decisions and never restarts an owner twice.

import type { Config, RolloutConfig } from './config';
import { decideOptIn } from './decide';
import { formatTime, parseTime } from './time';
import { judgeGate, type GateVerdict, type RevisionPods } from './gate';
import { isRecord, type Labels, type NamespaceMeta } from './k8s';
import { matchesSelector } from './selector';
import { windowState } from './windows';
import {
  decideStage,
  parseStageRecord,
  readLastGood,
  type StageDecision,
  type StageOwner,
  type StageRecord,
  type WaveStage,
} from './wave-stage';
import {
  AUTO_RESTART,
  CANARY_REVISION,
  COMPLETED_REVISION,
  CONFIG_REVISION,
  DISABLED,
  HEALED_AT,
  HEALED_REVISION,
  NO_REVISION,
  OWNER_KIND,
  OWNER_NAME,
  RESTARTED_AT,
  RESTARTED_REVISION,
  RESUME,
  RESUMED_AT,
  ROLLED_BACK_FROM,
  STAMPED,
  WAVE_STAGE,
  WAVE_STOPPED,
} from './names';
import {
  desiredStamp,
  readStamp,
  stampEquals,
  stampMergePatch,
  templateOf,
  type StampedKind,
} from './stamp';
import {
  deadlineExceeded,
  desiredPods,
  isOnDelete,
  rolloutStatus,
  type RolloutStatus,
  type Workload,
} from './rollout-status';

export const OWNER_STATES = [
  'current',
  'outdated',
  'rolling',
  'stalled',
  'escaped',
  'opted-out',
  'on-delete',
  'not-enabled',
] as const;
export type OwnerState = (typeof OWNER_STATES)[number];

export interface OwnerRef {
  namespace: string;
  kind: StampedKind;
  name: string;
}

export const ownerKey = (o: OwnerRef): string => `${o.namespace}/${o.kind}/${o.name}`;

// Plain code-unit comparison, not localeCompare: the order must not depend on the locale of
// whichever replica holds the lease.
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

export function compareOwners(a: OwnerRef, b: OwnerRef): number {
  return cmp(a.namespace, b.namespace) || cmp(a.kind, b.kind) || cmp(a.name, b.name);
}

/**
 * A rollout to a new revision, a heal of escaped pods, shedding sidecars after opt-out, or a
 * rollback of a failed wave's owners to the last good revision.
 */
export type RestartKind = 'rollout' | 'heal' | 'shed' | 'rollback';

/** Counts of the owner's pods, which the caller selects by label. */
export interface PodCounts {
  /** Stamped, no `outrigger.dev/revision`, no `outrigger.dev/skipped`: passed the webhook by. */
  escaped: number;
  /** Injected with a revision other than the current one. */
  outdated: number;
  /** Carrying our sidecar at any revision; what matters once the owner is out of scope. */
  injected: number;
  /** The pods at the current revision, for the health gate; absent when none were seen. */
  atRevision?: RevisionPods;
}

export interface OwnerInput {
  workload: Workload;
  /**
   * The namespace, not just a flag: the template's own `outrigger.dev/inject` can opt the
   * owner in or out against it, and the webhook decides by the same table (decide.ts).
   */
  namespace: NamespaceMeta;
  config: Config;
  /** The current configuration revision. */
  revision: string;
  pods: PodCounts;
  nowMs: number;
  systemNamespace?: string;
}

export interface RestartRecord {
  revision: string;
  atMs: number | undefined;
  completed: boolean;
}

export interface HealRecord {
  revision: string;
  atMs: number | undefined;
}

export type StallReason = 'rollout-stalled' | 'deadline-exceeded';

export interface Stall {
  reason: StallReason;
  /** When it stalled; a resume acknowledges stalls that began before it. */
  sinceMs: number;
  detail: string;
}

export interface OwnerAssessment {
  owner: OwnerRef;
  state: OwnerState;
  detail: string;
  /** The revision the owner should run: the current one, or NO_REVISION when out of scope. */
  target: string;
  /** The restart the owner needs, whether or not anything may act on it. */
  due: { kind: RestartKind; detail: string } | undefined;
  /** A restart of ours, to any revision, whose rollout has not finished. */
  inFlight: boolean;
  /** A restart of ours to the target whose rollout has not finished: we follow it. */
  following: boolean;
  /** Our restart to the target has finished and COMPLETED_REVISION is not written yet. */
  completed: boolean;
  /** Set when a restart of ours in flight has stalled. */
  stall: Stall | undefined;
  /** When our deadline for the followed rollout passes, if it is still running. */
  deadlineAtMs: number | undefined;
  restarted: RestartRecord | undefined;
  healed: HealRecord | undefined;
  rollout: RolloutStatus;
  /** The revision the template is stamped with: what new pods of this owner get. */
  pinned: string | undefined;
  /** Matches the canary selectors of `rollout.canary`. */
  canaryEligible: boolean;
  /** Restarted to the target as a canary of its wave. */
  canary: boolean;
  /** The revision our last rollback took the owner back from. */
  rolledBackFrom: string | undefined;
  /** The owner's pods at the current revision, as counted for the gate. */
  revisionPods: RevisionPods | undefined;
  /** The pods the owner wants (replicas, or a DaemonSet's nodes). */
  desiredPods: number;
}

function readRestart(meta: { annotations?: Labels; labels?: Labels }): RestartRecord | undefined {
  const revision = meta.annotations?.[RESTARTED_REVISION];
  if (!revision) return undefined;
  return {
    revision,
    atMs: parseTime(meta.annotations?.[RESTARTED_AT]),
    completed: meta.labels?.[COMPLETED_REVISION] === revision,
  };
}

function readHeal(annotations: Labels): HealRecord | undefined {
  const revision = annotations[HEALED_REVISION];
  return revision ? { revision, atMs: parseTime(annotations[HEALED_AT]) } : undefined;
}

function refOf(workload: Workload): OwnerRef {
  const meta = workload.metadata ?? {};
  return { namespace: meta.namespace ?? '', kind: workload.kind, name: meta.name ?? '' };
}

/** In scope: pods made from this template are to be injected (the webhook's own table). */
function scope(input: OwnerInput): { in: boolean; detail: string } {
  const template = templateOf(input.workload) ?? {};
  const decision = decideOptIn({
    pod: template,
    namespaceName: input.namespace.name,
    namespace: input.namespace,
    config: input.config,
    owner: { kind: input.workload.kind, name: refOf(input.workload).name, source: 'template' },
    nativeSidecar: true,
    systemNamespace: input.systemNamespace,
  });
  return decision.inject ? { in: true, detail: '' } : { in: false, detail: decision.detail };
}

function dueRestart(input: OwnerInput, inScope: boolean): OwnerAssessment['due'] {
  const { pods, workload, revision } = input;
  if (!inScope) {
    if (!input.config.rollout.restartOnOptOut || pods.injected === 0) return undefined;
    return { kind: 'shed', detail: `${pods.injected} pods still run the sidecar after opt-out` };
  }
  const stamp = readStamp(workload);
  if (!stamp)
    return { kind: 'rollout', detail: 'template not stamped: its pods predate injection' };
  if (stamp.revision !== revision)
    return { kind: 'rollout', detail: `stamped with revision ${stamp.revision}, not ${revision}` };
  if (!stampEquals(stamp, desiredStamp(workload, revision)))
    return { kind: 'rollout', detail: `stamp names ${stamp.ownerKind}/${stamp.ownerName}` };
  if (pods.outdated > 0)
    return { kind: 'rollout', detail: `${pods.outdated} pods run an older revision` };
  if (pods.escaped > 0) return { kind: 'heal', detail: `${pods.escaped} pods escaped injection` };
  return undefined;
}

const isSettled = (r: RolloutStatus): boolean =>
  r.state === 'complete' || r.state === 'unsupported';

function stallOf(
  rollout: RolloutStatus,
  record: RestartRecord,
  input: OwnerInput,
): Stall | undefined {
  if (rollout.state === 'stalled')
    return {
      reason: 'rollout-stalled',
      sinceMs: parseTime(rollout.since) ?? record.atMs ?? input.nowMs,
      detail: rollout.detail,
    };
  const seconds = input.config.rollout.progressDeadlineSeconds;
  if (record.atMs === undefined || !deadlineExceeded(record.atMs, input.nowMs, seconds))
    return undefined;
  return {
    reason: 'deadline-exceeded',
    sinceMs: record.atMs + seconds * 1000,
    detail: `not complete ${seconds}s after the restart at ${formatTime(record.atMs)}: ${rollout.detail}`,
  };
}

type Facts = Omit<OwnerAssessment, 'state' | 'detail'>;

/** Where our own restart record stands against the rollout the workload reports. */
function ownRestart(input: OwnerInput, target: string, rollout: RolloutStatus) {
  const restarted = readRestart(input.workload.metadata ?? {});
  const open = restarted !== undefined && !restarted.completed;
  const settled = isSettled(rollout);
  const inFlight = open && !settled;
  const following = inFlight && restarted.revision === target;
  const stall = inFlight ? stallOf(rollout, restarted, input) : undefined;
  const seconds = input.config.rollout.progressDeadlineSeconds;
  // One past the deadline, because it is exceeded only strictly after it.
  const deadlineAtMs =
    following && !stall && restarted.atMs !== undefined
      ? restarted.atMs + seconds * 1000 + 1
      : undefined;
  const completed = open && settled && recordsCompletion(input, restarted, target);
  return { restarted, inFlight, following, completed, stall, deadlineAtMs };
}

/**
 * Whether a finished restart gets COMPLETED_REVISION: one to the target, and a rollback too, or
 * it would count as in flight whenever its owner rolls again.
 */
function recordsCompletion(input: OwnerInput, restarted: RestartRecord, target: string): boolean {
  const rolledBack = input.workload.metadata?.annotations?.[ROLLED_BACK_FROM] !== undefined;
  return restarted.revision === target || rolledBack;
}

function canaryEligible(input: OwnerInput): boolean {
  const { namespaceSelector = {}, ownerSelector = {} } = input.config.rollout.canary;
  // An owner with no pods proves nothing about the revision.
  return (
    desiredPods(input.workload) > 0 &&
    matchesSelector(namespaceSelector, input.namespace.labels) &&
    matchesSelector(ownerSelector, input.workload.metadata?.labels)
  );
}

function facts(input: OwnerInput, inScope: boolean): Facts {
  const target = inScope ? input.revision : NO_REVISION;
  const rollout = rolloutStatus(input.workload);
  const annotations = input.workload.metadata?.annotations ?? {};
  return {
    owner: refOf(input.workload),
    target,
    due: dueRestart(input, inScope),
    ...ownRestart(input, target, rollout),
    healed: readHeal(annotations),
    rollout,
    pinned: readStamp(input.workload)?.revision,
    canaryEligible: canaryEligible(input),
    canary: target !== NO_REVISION && annotations[CANARY_REVISION] === target,
    rolledBackFrom: annotations[ROLLED_BACK_FROM],
    revisionPods: input.pods.atRevision,
    desiredPods: desiredPods(input.workload),
  };
}

type Classified = Pick<OwnerAssessment, 'state' | 'detail'>;

function rolloutState(f: Facts): Classified {
  if (f.stall) return { state: 'stalled', detail: f.stall.detail };
  switch (f.rollout.state) {
    case 'stalled':
      return { state: 'stalled', detail: f.rollout.detail };
    case 'progressing':
      return { state: 'rolling', detail: f.rollout.detail };
    case 'complete':
    case 'unsupported':
      return { state: 'current', detail: f.rollout.detail };
  }
}

const autoRestartDisabled = (w: Workload): boolean =>
  templateOf(w)?.metadata?.annotations?.[AUTO_RESTART] === DISABLED;

/**
 * First match wins: out of scope with nothing to shed; our own rollout in flight; nothing
 * due; the two kinds of owner we never restart; someone else's rollout still running (wait
 * for it rather than stack ours on it; a superseded restart of ours is replaced instead, as
 * the new revision may be its fix); then the restart that is due.
 */
function classify(f: Facts, input: OwnerInput, scopeDetail: string): Classified {
  if (!f.due && f.target === NO_REVISION) return { state: 'not-enabled', detail: scopeDetail };
  if (f.following || !f.due) return rolloutState(f);
  if (isOnDelete(input.workload))
    return { state: 'on-delete', detail: `${f.due.detail}; OnDelete: delete its pods to update` };
  if (autoRestartDisabled(input.workload))
    return { state: 'opted-out', detail: `${f.due.detail}; ${AUTO_RESTART}=${DISABLED}` };
  if (!isSettled(f.rollout) && !f.inFlight) return rolloutState(f);
  return { state: f.due.kind === 'heal' ? 'escaped' : 'outdated', detail: f.due.detail };
}

export function assessOwner(input: OwnerInput): OwnerAssessment {
  const inScope = scope(input);
  const f = facts(input, inScope.in);
  return { ...f, ...classify(f, input, inScope.detail) };
}

export function ownerState(input: OwnerInput): OwnerState {
  return assessOwner(input).state;
}

// ---------------------------------------------------------------------------------------------
// The wave.

export const ACTIONS = ['none', 'follow', 'restart', 'wait', 'skip', 'stop'] as const;
export type Action = (typeof ACTIONS)[number];

/** Why an owner got its action; a closed set for metrics, Events, logs and `outrigger status`. */
export const REPORT_REASONS = [
  'current',
  'not-enabled',
  'following',
  'rollout-in-progress',
  'rollout-stalled',
  'deadline-exceeded',
  'stall-acknowledged',
  'on-delete',
  'auto-restart-disabled',
  'already-restarted',
  'outdated',
  'shed-sidecars',
  'escaped',
  'heal-disabled',
  'heal-did-not-help',
  'heal-backoff',
  'webhook-unavailable',
  'wave-stopped',
  'budget',
  'manual-mode',
  'canary-stage',
  'window-closed',
  'proxy-failing',
  'rollback',
  'write-refused',
] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];

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

export interface WaveStop {
  /** The configuration revision the wave stopped at; a new revision lifts the stop. */
  revision: string;
  /** Free text: the owner, the reason and when, for the admin who reads the ConfigMap. */
  reason: string;
}

/** The wave's record on the configuration ConfigMap. */
export interface WaveState {
  stopped: WaveStop | undefined;
  resumeRequested: boolean;
  resumedAtMs: number | undefined;
  /** How far the wave got past its canaries. */
  stage?: StageRecord;
  /** The last revision whose wave completed. */
  lastGood?: string;
}

// The stop is `<revision> <free text>` rather than JSON: every value parses (a hand-edited
// one cannot wedge the controller), and an admin can read it, or write one to stop a wave.
function parseStop(value: string | undefined): WaveStop | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  const [revision = '', ...rest] = text.split(/\s+/);
  return { revision, reason: rest.join(' ') };
}

export function readWave(annotations: Labels | undefined): WaveState {
  return {
    stopped: parseStop(annotations?.[WAVE_STOPPED]),
    resumeRequested: (annotations?.[RESUME] ?? '') !== '',
    resumedAtMs: parseTime(annotations?.[RESUMED_AT]),
    stage: parseStageRecord(annotations?.[WAVE_STAGE]),
    lastGood: readLastGood(annotations),
  };
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

/** Why the wave stopped: our rollout stalled, or the proxy failed the health gate. */
export type StopReason = StallReason | 'proxy-failing';

export interface StopDecision {
  owner: OwnerRef;
  reason: StopReason;
  detail: string;
}

export interface WavePlan {
  /** Owners to restart now (auto mode only). */
  restart: RestartOrder[];
  /** Followed rollouts now complete: record COMPLETED_REVISION (auto mode only). */
  complete: OwnerRef[];
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

interface Verdict {
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

interface Context {
  rollout: RolloutConfig;
  nowMs: number;
  /** Stalls that began at or before this were acknowledged by a resume. */
  resumedAtMs: number | undefined;
  webhookReady: boolean;
}

/** How soon a heal held for an unanswering webhook is looked at again. */
export const WEBHOOK_RECHECK_MS = 5000;

function stalledVerdict(a: OwnerAssessment, ctx: Context): Verdict {
  if (!a.following || !a.stall) {
    const detail = `stalled, but not in a restart of ours to ${a.target}: ${a.detail}`;
    return a.due
      ? { action: 'wait', reason: 'rollout-stalled', detail }
      : { action: 'none', reason: 'rollout-stalled', detail };
  }
  if (ctx.resumedAtMs !== undefined && a.stall.sinceMs <= ctx.resumedAtMs)
    return { action: 'none', reason: 'stall-acknowledged', detail: a.stall.detail };
  return { action: 'stop', reason: a.stall.reason, detail: a.stall.detail, stops: true };
}

function outdatedVerdict(a: OwnerAssessment): Verdict {
  const kind = a.due?.kind ?? 'rollout';
  if (a.restarted?.revision === a.target)
    return {
      action: 'skip',
      reason: 'already-restarted',
      detail: `restarted to ${a.target} once already; not again for this revision (${a.detail})`,
    };
  return {
    action: 'restart',
    reason: kind === 'shed' ? 'shed-sidecars' : 'outdated',
    detail: a.detail,
    candidate: kind,
  };
}

function escapedVerdict(a: OwnerAssessment, ctx: Context): Verdict {
  if (!ctx.rollout.healEscapedPods)
    return { action: 'skip', reason: 'heal-disabled', detail: a.detail };
  const healed = a.healed;
  if (healed?.revision === a.target)
    return {
      action: 'skip',
      reason: 'heal-did-not-help',
      detail: `healed once at this revision and ${a.detail}`,
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
      detail: `${a.detail}; the webhook is not ready, so new pods would escape too`,
      recheckAtMs: ctx.nowMs + WEBHOOK_RECHECK_MS,
    };
  return { action: 'restart', reason: 'escaped', detail: a.detail, candidate: 'heal' };
}

/**
 * Rolled back from the current revision by its failed wave, with no resume since: the wave is
 * stopped for it, whether or not the stop's record on the ConfigMap is there to say so (a write
 * that conflicted, a replacement controller whose cache has not caught up).
 */
function rolledBackHere(a: OwnerAssessment, ctx: Context): boolean {
  if (a.rolledBackFrom !== a.target || a.target === NO_REVISION) return false;
  const at = a.restarted?.atMs ?? 0;
  return ctx.resumedAtMs === undefined || ctx.resumedAtMs < at;
}

function verdict(a: OwnerAssessment, ctx: Context): Verdict {
  if (a.due && rolledBackHere(a, ctx))
    return {
      action: 'wait',
      reason: 'wave-stopped',
      detail: `rolled back from ${a.target} by its failed wave; waits for a resume or a new revision`,
      stopped: true,
    };
  return stateVerdict(a, ctx);
}

function stateVerdict(a: OwnerAssessment, ctx: Context): Verdict {
  switch (a.state) {
    case 'current':
      return { action: 'none', reason: 'current', detail: a.detail };
    case 'not-enabled':
      return { action: 'none', reason: 'not-enabled', detail: a.detail };
    case 'rolling':
      if (a.following)
        return {
          action: 'follow',
          reason: 'following',
          detail: a.detail,
          recheckAtMs: a.deadlineAtMs,
        };
      return { action: a.due ? 'wait' : 'none', reason: 'rollout-in-progress', detail: a.detail };
    case 'stalled':
      return stalledVerdict(a, ctx);
    case 'on-delete':
      return { action: 'skip', reason: 'on-delete', detail: a.detail };
    case 'opted-out':
      return { action: 'skip', reason: 'auto-restart-disabled', detail: a.detail };
    case 'outdated':
      return outdatedVerdict(a);
    case 'escaped':
      return escapedVerdict(a, ctx);
  }
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
 * it lasts.
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
    const held = holdOf(input, v.candidate, { stopped, window: window.open, slots });
    if (!held) {
      slots -= 1;
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

/** Restarted by the current wave and still stamped with its revision. */
const inWave = (a: OwnerAssessment): boolean =>
  a.target !== NO_REVISION && a.restarted?.revision === a.target && a.pinned === a.target;

/**
 * The gate of an owner the wave restarted. A failure an admin's resume acknowledged (the
 * restart came before the resume) no longer counts: the admin chose to go on.
 */
function gateOf(a: OwnerAssessment, ctx: Context, podsSynced: boolean): GateVerdict | undefined {
  if (!inWave(a)) return undefined;
  const g = pastDeadline(
    judgeGate({
      rollout: a.rollout,
      stall: a.stall,
      pods: a.revisionPods,
      podsSynced,
      desired: a.desiredPods,
    }),
    a,
    { ...ctx, podsSynced },
  );
  const acknowledged = ctx.resumedAtMs !== undefined && (a.restarted?.atMs ?? 0) <= ctx.resumedAtMs;
  if (g.state !== 'failed' || !acknowledged) return g;
  return { state: 'passed', detail: `${g.detail} (acknowledged by the resume)` };
}

/** When a pending gate fails: progressDeadlineSeconds after the restart, as a rollout would. */
const gateDeadlineMs = (a: OwnerAssessment, ctx: Context): number | undefined =>
  a.restarted?.atMs === undefined
    ? undefined
    : a.restarted.atMs + ctx.rollout.progressDeadlineSeconds * 1000 + 1;

/**
 * A gate still pending past the deadline fails: pods that never become Ready after a complete
 * rollout (unschedulable, not ready) would otherwise hold the wave, neither going on nor stopping.
 */
function pastDeadline(
  g: GateVerdict,
  a: OwnerAssessment,
  ctx: Context & { podsSynced: boolean },
): GateVerdict {
  const at = gateDeadlineMs(a, ctx);
  // Pending because the controller has not listed the pods says nothing about the owner.
  if (g.state !== 'pending' || !ctx.podsSynced || at === undefined || ctx.nowMs < at) return g;
  const seconds = ctx.rollout.progressDeadlineSeconds;
  return { state: 'failed', detail: `not healthy ${seconds}s after the restart: ${g.detail}` };
}

/** A failed gate stops the wave, like a stalled rollout of ours; a pending one is looked at again by its deadline. */
function gatedVerdict(
  v: Verdict,
  g: GateVerdict | undefined,
  a: OwnerAssessment,
  ctx: Context,
): Verdict {
  if (g?.state === 'pending')
    return { ...v, recheckAtMs: earliest([v.recheckAtMs, gateDeadlineMs(a, ctx)]) };
  if (g?.state !== 'failed' || v.stops) return v;
  const reason = g.trouble ? 'proxy-failing' : 'deadline-exceeded';
  return { action: 'stop', reason, detail: g.detail, stops: true };
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
  };
}

/** What the stage holds back, starts as a canary, or rolls back. */
function applyStage(judged: readonly Judged[], stage: StageDecision): Judged[] {
  const rollback = new Set(stage.rollback?.keys ?? []);
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

/** The earliest of the times given, or undefined when none is. */
export function earliest(times: readonly (number | undefined)[]): number | undefined {
  const known = times.filter((t) => t !== undefined);
  return known.length > 0 ? Math.min(...known) : undefined;
}

/** A stop recorded for a revision that is no longer current. */
const isStale = (stop: WaveStop | undefined, revision: string): boolean =>
  stop !== undefined && stop.revision !== revision;

type Writes = Pick<
  WavePlan,
  'restart' | 'complete' | 'stop' | 'resume' | 'clearStop' | 'record' | 'lastGood'
>;

/** What manual and dry-run modes write: nothing. */
const NO_WRITES: Writes = {
  restart: [],
  complete: [],
  stop: undefined,
  resume: false,
  clearStop: false,
  record: undefined,
  lastGood: undefined,
};

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
    if (v.candidate && input.backingOff?.has(ownerKey(a.owner)))
      return {
        a,
        g,
        v: {
          action: 'wait',
          reason: 'write-refused',
          detail: `${v.detail}; the API server refused its last patch, tried again after a back-off`,
        },
      };
    return { a, g, v };
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
  const judged = admit(staged, input, stopped, window);
  const writes: Writes = {
    restart: restartsOf(judged),
    complete: owners.filter((a) => a.completed).map((a) => a.owner),
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

// ---------------------------------------------------------------------------------------------
// The writes that record decisions in the cluster, as JSON merge patches (null deletes a key).

type Patch = Record<string, unknown>;

function merge(a: Patch, b: Patch): Patch {
  const out: Patch = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isRecord(prev) && isRecord(v) ? merge(prev, v) : v;
  }
  return out;
}

const STAMP_ANNOTATIONS = [OWNER_KIND, OWNER_NAME, CONFIG_REVISION];

/** The template half of a restart: the stamp (or, when shedding, its removal). */
function templatePatch(workload: Workload, order: RestartOrder, at: string): Patch {
  const meta = templateOf(workload)?.metadata ?? {};
  // The template must change or nothing rolls: a heal, pods left behind a current stamp, or
  // shedding from a template that carries no stamp to take off.
  const nudge = { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } } };
  if (order.kind === 'shed') {
    const off = {
      spec: {
        template: {
          metadata: {
            labels: { [STAMPED]: null },
            annotations: Object.fromEntries(STAMP_ANNOTATIONS.map((k) => [k, null])),
          },
        },
      },
    };
    const stamped =
      meta.labels?.[STAMPED] !== undefined ||
      STAMP_ANNOTATIONS.some((k) => meta.annotations?.[k] !== undefined);
    return stamped ? off : merge(off, nudge);
  }
  const stamp = desiredStamp(workload, order.revision);
  const base = stampMergePatch(stamp);
  return stampEquals(readStamp(workload), stamp) ? merge(base, nudge) : base;
}

/** The canary and rollback marks a restart sets, or clears when they no longer hold. */
function waveMarks(workload: Workload, order: RestartOrder): Record<string, string | null> {
  const had = workload.metadata?.annotations ?? {};
  const marks: Record<string, string | null> = {};
  if (order.canary) marks[CANARY_REVISION] = order.revision;
  else if (had[CANARY_REVISION] !== undefined) marks[CANARY_REVISION] = null;
  if (order.kind === 'rollback' && order.from) marks[ROLLED_BACK_FROM] = order.from;
  else if (had[ROLLED_BACK_FROM] !== undefined) marks[ROLLED_BACK_FROM] = null;
  return marks;
}

export interface RestartPatchInput {
  workload: Workload;
  order: RestartOrder;
  nowMs: number;
}

/**
 * The one write that restarts an owner and records it. It carries the resourceVersion the
 * decision was made on, so a write from a stale cache fails with a conflict instead of
 * restarting an owner whose restart it has not seen yet.
 */
export function restartPatch({ workload, order, nowMs }: RestartPatchInput): Patch {
  const at = formatTime(nowMs);
  const annotations: Record<string, string | null> = {
    [RESTARTED_REVISION]: order.revision,
    [RESTARTED_AT]: at,
    ...(order.kind === 'heal' ? { [HEALED_REVISION]: order.revision, [HEALED_AT]: at } : {}),
    ...waveMarks(workload, order),
  };
  const rv = workload.metadata?.resourceVersion;
  const metadata = {
    ...(rv ? { resourceVersion: rv } : {}),
    labels: { [COMPLETED_REVISION]: null },
    annotations,
  };
  return merge({ metadata }, templatePatch(workload, order, at));
}

/** Records that our restart to `revision` completed: a label, so no generation moves. */
export function completionPatch(revision: string): Patch {
  return { metadata: { labels: { [COMPLETED_REVISION]: revision } } };
}

export interface WaveStopPatchInput {
  stop: StopDecision;
  revision: string;
  nowMs: number;
}

/** The stop as one line an admin can read in `kubectl get configmap -o yaml`. */
export function waveStopPatch({ stop, revision, nowMs }: WaveStopPatchInput): Patch {
  const value = `${revision} ${ownerKey(stop.owner)} ${stop.reason} at ${formatTime(nowMs)}: ${stop.detail}`;
  // The stage goes with the stop: a resume judges the canaries again from the start.
  return { metadata: { annotations: { [WAVE_STOPPED]: value, [WAVE_STAGE]: null } } };
}

export function clearStopPatch(): Patch {
  return { metadata: { annotations: { [WAVE_STOPPED]: null } } };
}

export function resumePatch(nowMs: number): Patch {
  return {
    metadata: {
      annotations: {
        [WAVE_STOPPED]: null,
        [RESUME]: null,
        [RESUMED_AT]: formatTime(nowMs),
        [WAVE_STAGE]: null,
      },
    },
  };
}
