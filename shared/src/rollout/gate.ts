// The health gate an owner restarted by a wave must pass (docs/controller.md, "The wave"): its
// rollout completes, its pods at the wave's revision are Ready, and the proxy container in them
// has not restarted and is not waiting in a back-off. Pure: the caller reads the pods.

import type { Config } from '../config/config';
import { isRecord, type PodLike } from '../kubernetes/k8s';
import type { RolloutStatus } from './rollout-status';
import { parseTime } from '../kubernetes/time';

export const GATE_STATES = ['pending', 'passed', 'failed'] as const;
export type GateState = (typeof GATE_STATES)[number];

/** Waiting reasons that mean the container will not come up by itself soon. */
export const BACKOFF_REASONS: readonly string[] = [
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'InvalidImageName',
  'ErrImageNeverPull',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
];

/** What is wrong with the proxy container in one pod. */
export interface ProxyTrouble {
  pod: string;
  container: string;
  /** A waiting reason (CrashLoopBackOff, ImagePullBackOff...) or `Restarted`. */
  reason: string;
  restarts: number;
  /** The waiting message or the last termination, when the kubelet gave one. */
  message: string;
}

/** A pod that is not Ready, as much of it as a delete with preconditions needs. */
export interface UnreadyPod {
  name: string;
  uid: string | undefined;
  resourceVersion: string | undefined;
}

/** The pods of one owner at the wave's revision. */
export interface RevisionPods {
  total: number;
  ready: number;
  /** The first proxy in trouble, if any. */
  trouble: ProxyTrouble | undefined;
  /** The pods that are not Ready (few: a forced rollback reads them, forced-rollback.ts). */
  unready: readonly UnreadyPod[];
}

interface ContainerStatus {
  name: string;
  restartCount: number;
  waiting?: { reason?: string; message?: string };
  terminated?: { reason?: string; exitCode?: number; finishedAtMs?: number };
}

const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {});
const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
/** A time as the API server's JSON has it, or as a client that revived it as a Date. */
const timeOf = (v: unknown): number | undefined =>
  v instanceof Date ? v.getTime() : parseTime(text(v));

function statusesOf(pod: PodLike): ContainerStatus[] {
  const status = rec(pod.status);
  const all = [status.initContainerStatuses, status.containerStatuses].flatMap((l) =>
    Array.isArray(l) ? (l as unknown[]) : [],
  );
  return all.map((raw) => {
    const s = rec(raw);
    const state = rec(s.state);
    const last = rec(rec(s.lastState).terminated);
    const waiting = isRecord(state.waiting) ? state.waiting : undefined;
    return {
      name: text(s.name) ?? '',
      restartCount: typeof s.restartCount === 'number' ? s.restartCount : 0,
      waiting: waiting && { reason: text(waiting.reason), message: text(waiting.message) },
      terminated:
        isRecord(s.lastState) && isRecord(rec(s.lastState).terminated)
          ? {
              reason: text(last.reason),
              exitCode: typeof last.exitCode === 'number' ? last.exitCode : undefined,
              finishedAtMs: timeOf(last.finishedAt),
            }
          : undefined,
    };
  });
}

function lastExit(status: ContainerStatus): string {
  if (!status.terminated) return '';
  const code =
    status.terminated.exitCode === undefined ? '' : ` with exit code ${status.terminated.exitCode}`;
  return `last ended ${status.terminated.reason ?? 'Terminated'}${code}`;
}

/**
 * The trouble of the containers injection adds (the proxy, and the init container that sets up
 * redirection) in one pod, if either has any; the application's own containers are not judged.
 * With `sinceMs` (the wave's restart of the owner), a restart counts only when the container's
 * last run ended at or after it: a pod older than the restart whose proxy restarted once last
 * week is no evidence against the new revision. A back-off now always counts.
 */
export function proxyTrouble(
  pod: PodLike,
  proxyName: string,
  initName?: string,
  sinceMs?: number,
): ProxyTrouble | undefined {
  const statuses = statusesOf(pod);
  for (const name of initName ? [proxyName, initName] : [proxyName]) {
    const s = statuses.find((c) => c.name === name);
    const trouble = s && troubleOf(pod, s, sinceMs);
    if (trouble) return trouble;
  }
  return undefined;
}

function troubleOf(
  pod: PodLike,
  status: ContainerStatus,
  sinceMs: number | undefined,
): ProxyTrouble | undefined {
  const base = {
    pod: pod.metadata?.name ?? '',
    container: status.name,
    restarts: status.restartCount,
  };
  const reason = status.waiting?.reason;
  if (reason !== undefined && BACKOFF_REASONS.includes(reason))
    return { ...base, reason, message: status.waiting?.message ?? lastExit(status) };
  if (status.restartCount > 0 && restartedSince(status, sinceMs))
    return { ...base, reason: 'Restarted', message: lastExit(status) };
  return undefined;
}

/** Whether the container's last run ended at or after `sinceMs`; unknown counts as after. */
function restartedSince(status: ContainerStatus, sinceMs: number | undefined): boolean {
  const finishedAtMs = status.terminated?.finishedAtMs;
  return sinceMs === undefined || finishedAtMs === undefined || finishedAtMs >= sinceMs;
}

export function isPodReady(pod: PodLike): boolean {
  const conditions = rec(pod.status).conditions;
  if (!Array.isArray(conditions)) return false;
  return conditions.some((c) => rec(c).type === 'Ready' && rec(c).status === 'True');
}

/** The names of the containers injection adds, whose trouble fails the gate. */
export function injectedContainerNames(config: Config): { proxy: string; init?: string } {
  return config.init.enabled
    ? { proxy: config.proxy.name, init: config.init.name }
    : { proxy: config.proxy.name };
}

/** Pods that ended (evicted, completed) are no pods of the owner's any more. */
const ended = (pod: PodLike): boolean => {
  const phase = rec(pod.status).phase;
  return phase === 'Failed' || phase === 'Succeeded';
};

/**
 * The gate's view of an owner's pods at the revision, with one more pod counted. `sinceMs` is
 * when the wave restarted the owner (see proxyTrouble).
 */
export function countRevisionPod(
  before: RevisionPods | undefined,
  pod: PodLike,
  names: { proxy: string; init?: string },
  sinceMs?: number,
): RevisionPods {
  const c = before ?? { total: 0, ready: 0, trouble: undefined, unready: [] };
  if (ended(pod)) return c;
  const ready = isPodReady(pod);
  const meta = pod.metadata ?? {};
  return {
    total: c.total + 1,
    ready: c.ready + (ready ? 1 : 0),
    trouble: c.trouble ?? proxyTrouble(pod, names.proxy, names.init, sinceMs),
    unready: ready
      ? c.unready
      : [
          ...c.unready,
          { name: meta.name ?? '', uid: meta.uid, resourceVersion: text(meta.resourceVersion) },
        ],
  };
}

export function describeTrouble(trouble: ProxyTrouble): string {
  const restarts = trouble.restarts > 0 ? `, restarted ${trouble.restarts} times` : '';
  const message = trouble.message ? `: ${trouble.message}` : '';
  return `container ${trouble.container} of pod ${trouble.pod} is ${trouble.reason === 'Restarted' ? 'restarting' : trouble.reason}${restarts}${message}`;
}

export interface GateInput {
  rollout: RolloutStatus;
  /** The pods the owner wants; when any, at least one must be seen Ready at the revision. */
  desired: number;
  /** Our restart's stall (rollout stalled or past our deadline), if any. */
  stall: { detail: string } | undefined;
  pods: RevisionPods | undefined;
  /** Whether the pods at the revision have been listed: a gate never passes on missing data. */
  podsSynced: boolean;
}

export interface GateVerdict {
  state: GateState;
  detail: string;
  trouble?: ProxyTrouble;
}

export function judgeGate(gate: GateInput): GateVerdict {
  const trouble = gate.pods?.trouble;
  if (trouble) return { state: 'failed', detail: describeTrouble(trouble), trouble };
  if (gate.stall) return { state: 'failed', detail: gate.stall.detail };
  if (gate.rollout.state === 'progressing' || gate.rollout.state === 'stalled')
    return { state: 'pending', detail: `rollout not complete: ${gate.rollout.detail}` };
  return podsVerdict(gate);
}

/** Once the rollout is complete: every pod at the revision Ready, and one at least. */
function podsVerdict(gate: GateInput): GateVerdict {
  if (!gate.podsSynced)
    return { state: 'pending', detail: 'the pods at the revision are not listed yet' };
  const { total = 0, ready = 0 } = gate.pods ?? {};
  if (ready < total) return { state: 'pending', detail: `${ready} of ${total} pods Ready` };
  if (gate.desired > 0 && ready === 0)
    return { state: 'pending', detail: 'no pod at the revision seen Ready yet' };
  return {
    state: 'passed',
    detail: `rollout complete, ${ready} of ${total} pods Ready, proxy not restarted`,
  };
}
