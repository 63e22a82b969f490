// The state of each owner, with no I/O and no clock (docs/controller.md, "Owner states"):
// in scope or not, the restart it is due, and where our own last restart of it stands. Everything
// it reads back comes from annotations the controller wrote into the cluster, so a replacement
// controller reaches the same assessment and never restarts an owner twice.

import type { Config } from '../config/config';
import { decideOptIn } from '../admission/decide';
import { formatTime, parseTime } from '../kubernetes/time';
import {
  readForcedRecord,
  stuckRollback,
  type ForcedRecord,
  type StuckRollback,
} from './forced-rollback';
import type { RevisionPods } from './gate';
import type { Labels, NamespaceMeta } from '../kubernetes/k8s';
import { matchesSelector } from '../kubernetes/selector';
import { AUTO_RESTART, DISABLED, NO_REVISION, PROXY_KEYS, type WaveKeys } from '../names';
import type { AppliedSet } from '../admission/applied-sets';
import { setSelectsTemplate } from '../admission/set-injection';
import {
  desiredStamp,
  readStamp,
  stampEquals,
  templateOf,
  type StampedKind,
} from '../admission/stamp';
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

export const ownerKey = (owner: OwnerRef): string =>
  `${owner.namespace}/${owner.kind}/${owner.name}`;

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
  /**
   * The sidecar set this assessment is for; absent: the proxy. A set's owner is in scope where
   * the set selects its template, and its stamp, records and marks are the set's (its keys);
   * `config.rollout` is then the set's own rollout (effectiveRollout).
   */
  set?: AppliedSet;
}

/** The names this assessment reads: the set's, or the proxy's. */
const keysOf = (input: OwnerInput): WaveKeys => input.set?.keys ?? PROXY_KEYS;

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
  /** The template carries `outrigger.dev/auto-restart: disabled`: no restart of ours, a rollback neither. */
  autoRestartDisabled: boolean;
  /** A StatefulSet our rollback left with pods its controller will not replace. */
  stuck: StuckRollback | undefined;
  /** What a forced rollback of ours deleted, as recorded on the owner. */
  forced: ForcedRecord | undefined;
}

function readRestart(
  meta: { annotations?: Labels; labels?: Labels },
  keys: WaveKeys,
): RestartRecord | undefined {
  const revision = meta.annotations?.[keys.restartedRevision];
  if (!revision) return undefined;
  return {
    revision,
    atMs: parseTime(meta.annotations?.[keys.restartedAt]),
    completed: meta.labels?.[keys.completedRevision] === revision,
  };
}

function readHeal(annotations: Labels, keys: WaveKeys): HealRecord | undefined {
  const revision = annotations[keys.healedRevision];
  return revision ? { revision, atMs: parseTime(annotations[keys.healedAt]) } : undefined;
}

/** The revision a set's stamp in the template names, when the proxy's stamp is there too. */
function setStamp(workload: Workload, keys: WaveKeys): string | undefined {
  if (!readStamp(workload)) return undefined;
  return templateOf(workload)?.metadata?.annotations?.[keys.configRevision] || undefined;
}

/** The revision the template pins new pods to, for this assessment's set. */
const pinnedOf = (input: OwnerInput): string | undefined =>
  input.set ? setStamp(input.workload, input.set.keys) : readStamp(input.workload)?.revision;

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
  if (!decision.inject) return { in: false, detail: decision.detail };
  if (!input.set) return { in: true, detail: '' };
  const why = setSelectsTemplate(input.set, template, input.namespace, input.workload.kind);
  return why === undefined ? { in: true, detail: '' } : { in: false, detail: why };
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
  if (input.set) return dueSetRestart(input, input.set);
  if (stamp.revision !== revision)
    return { kind: 'rollout', detail: `stamped with revision ${stamp.revision}, not ${revision}` };
  if (!stampEquals(stamp, desiredStamp(workload, revision)))
    return { kind: 'rollout', detail: `stamp names ${stamp.ownerKind}/${stamp.ownerName}` };
  if (pods.outdated > 0)
    return { kind: 'rollout', detail: `${pods.outdated} pods run an older revision` };
  if (pods.escaped > 0) return { kind: 'heal', detail: `${pods.escaped} pods escaped injection` };
  return undefined;
}

/** A set's restart: its stamp, then pods left on another of its revisions. */
function dueSetRestart(input: OwnerInput, set: AppliedSet): OwnerAssessment['due'] {
  const { revision, pods } = input;
  const { name } = set.set;
  const stamped = setStamp(input.workload, set.keys);
  const why =
    stamped === undefined
      ? `template not stamped for set ${name}: its pods predate the set`
      : stamped !== revision
        ? `set ${name} stamped with revision ${stamped}, not ${revision}`
        : pods.outdated > 0
          ? `${pods.outdated} pods run an older revision of set ${name}`
          : undefined;
  return why === undefined ? undefined : { kind: 'rollout', detail: why };
}

const rolloutFinished = (status: RolloutStatus): boolean =>
  status.state === 'complete' || status.state === 'unsupported';

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
  const restarted = readRestart(input.workload.metadata ?? {}, keysOf(input));
  const open = restarted !== undefined && !restarted.completed;
  const finished = rolloutFinished(rollout);
  const inFlight = open && !finished;
  const following = inFlight && restarted.revision === target;
  const stall = inFlight ? stallOf(rollout, restarted, input) : undefined;
  const seconds = input.config.rollout.progressDeadlineSeconds;
  // One past the deadline, because it is exceeded only strictly after it.
  const deadlineAtMs =
    following && !stall && restarted.atMs !== undefined
      ? restarted.atMs + seconds * 1000 + 1
      : undefined;
  const completed = open && finished && recordsCompletion(input, restarted, target);
  return { restarted, inFlight, following, completed, stall, deadlineAtMs };
}

/**
 * Whether a finished restart gets COMPLETED_REVISION: one to the target, and a rollback too, or
 * it would count as in flight whenever its owner rolls again.
 */
function recordsCompletion(input: OwnerInput, restarted: RestartRecord, target: string): boolean {
  const rolledBack =
    input.workload.metadata?.annotations?.[keysOf(input).rolledBackFrom] !== undefined;
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

const autoRestartDisabled = (workload: Workload): boolean =>
  templateOf(workload)?.metadata?.annotations?.[AUTO_RESTART] === DISABLED;

function factsOf(input: OwnerInput, inScope: boolean): Facts {
  const target = inScope ? input.revision : NO_REVISION;
  const rollout = rolloutStatus(input.workload);
  const annotations = input.workload.metadata?.annotations ?? {};
  const keys = keysOf(input);
  const own = ownRestart(input, target, rollout);
  return {
    owner: refOf(input.workload),
    target,
    due: dueRestart(input, inScope),
    ...own,
    healed: readHeal(annotations, keys),
    rollout,
    pinned: pinnedOf(input),
    canaryEligible: canaryEligible(input),
    canary: target !== NO_REVISION && annotations[keys.canaryRevision] === target,
    rolledBackFrom: annotations[keys.rolledBackFrom],
    revisionPods: input.pods.atRevision,
    desiredPods: desiredPods(input.workload),
    autoRestartDisabled: autoRestartDisabled(input.workload),
    stuck: stuckRollback({
      workload: input.workload,
      target,
      rolledBackFrom: annotations[keys.rolledBackFrom],
      inFlight: own.inFlight,
      restartedRevision: own.restarted?.revision,
      unready: input.pods.atRevision?.unready,
    }),
    forced: readForcedRecord(annotations, keys),
  };
}

type Classified = Pick<OwnerAssessment, 'state' | 'detail'>;

function rolloutState(facts: Facts): Classified {
  if (facts.stall) return { state: 'stalled', detail: facts.stall.detail };
  switch (facts.rollout.state) {
    case 'stalled':
      return { state: 'stalled', detail: facts.rollout.detail };
    case 'progressing':
      return { state: 'rolling', detail: facts.rollout.detail };
    case 'complete':
    case 'unsupported':
      return { state: 'current', detail: facts.rollout.detail };
  }
}

/**
 * First match wins: out of scope with nothing to shed; our own rollout in flight; nothing
 * due; the two kinds of owner we never restart; someone else's rollout still running (wait
 * for it rather than stack ours on it; a superseded restart of ours is replaced instead, as
 * the new revision may be its fix); then the restart that is due.
 */
function classify(facts: Facts, input: OwnerInput, scopeDetail: string): Classified {
  if (!facts.due && facts.target === NO_REVISION)
    return { state: 'not-enabled', detail: scopeDetail };
  if (facts.following || !facts.due) return rolloutState(facts);
  if (isOnDelete(input.workload))
    return {
      state: 'on-delete',
      detail: `${facts.due.detail}; OnDelete: delete its pods to update`,
    };
  if (facts.autoRestartDisabled)
    return { state: 'opted-out', detail: `${facts.due.detail}; ${AUTO_RESTART}=${DISABLED}` };
  if (!rolloutFinished(facts.rollout) && !facts.inFlight) return rolloutState(facts);
  return { state: facts.due.kind === 'heal' ? 'escaped' : 'outdated', detail: facts.due.detail };
}

export function assessOwner(input: OwnerInput): OwnerAssessment {
  const inScope = scope(input);
  const facts = factsOf(input, inScope.in);
  return { ...facts, ...classify(facts, input, inScope.detail) };
}

export function ownerState(input: OwnerInput): OwnerState {
  return assessOwner(input).state;
}
