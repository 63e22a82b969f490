// What a rollback leaves for Outrigger to finish (docs/controller.md, "What a rollback does for
// each kind"). Reverting a StatefulSet's template is not enough when its pods are managed
// OrderedReady: its controller replaces a pod only once every pod before it is Running and
// Ready, so a pod that the failed revision left not Ready is never replaced, and the StatefulSet
// stays degraded. Kubernetes documents this as the "forced rollback": delete that pod, and the
// StatefulSet recreates it from the reverted template. This decides which pod, one at a time,
// highest ordinal first, and only once every other pod is Ready. Pure: the caller deletes, with
// the pod's uid and resourceVersion as preconditions, so a pod that became Ready since it was
// seen is never deleted.

import type { UnreadyPod } from './gate';
import type { Labels } from '../kubernetes/k8s';
import { NO_REVISION, PROXY_KEYS, type WaveKeys } from '../names';
import type { StatefulSetObject, Workload } from './rollout-status';
import { formatTime, parseTime } from '../kubernetes/time';

/** What a forced rollback did, as FORCED_ROLLBACK records it on the StatefulSet. */
export interface ForcedRecord {
  /** The revision rolled back from. */
  from: string;
  /** The pods deleted, in the order they were. */
  pods: readonly string[];
  /** When the last was. */
  atMs: number;
}

export function readForcedRecord(
  annotations: Labels | undefined,
  keys: WaveKeys = PROXY_KEYS,
): ForcedRecord | undefined {
  const [from = '', pods = '', at = ''] = (annotations?.[keys.forcedRollback] ?? '')
    .trim()
    .split(/\s+/);
  const atMs = parseTime(at);
  if (from === '' || pods === '' || atMs === undefined) return undefined;
  return { from, pods: pods.split(','), atMs };
}

/** The merge patch recording one more pod deleted by the forced rollback from `from`. */
export function forcedRecordPatch(
  had: ForcedRecord | undefined,
  deleted: { from: string; pod: string },
  nowMs: number,
  keys: WaveKeys = PROXY_KEYS,
): { metadata: { annotations: Labels } } {
  const { from, pod } = deleted;
  const earlier = had?.from === from ? had.pods.filter((p) => p !== pod) : [];
  const value = `${from} ${[...earlier, pod].join(',')} ${formatTime(nowMs)}`;
  return { metadata: { annotations: { [keys.forcedRollback]: value } } };
}

/** One line on what the forced rollback from `from` did, for the report. */
export const describeForced = (record: ForcedRecord): string =>
  `a forced rollback deleted ${record.pods.join(', ')} (last at ${formatTime(record.atMs)}), not Ready on ${record.from}`;

/** A StatefulSet left degraded by a rollback, and what to do about it. */
export interface StuckRollback {
  /** The revision rolled back from, which the stuck pods still run. */
  from: string;
  /** Its pods on `from` that are not Ready, highest ordinal first. */
  pods: readonly UnreadyPod[];
  /** The pod to delete now; undefined while the replacement of the last one is not Ready. */
  next: UnreadyPod | undefined;
  /** One line for the report, Events and `outrigger status`. */
  detail: string;
}

export interface StuckInput {
  workload: Workload;
  /** The revision the owner should run (the current one). */
  target: string;
  /** The revision our last rollback took the owner back from. */
  rolledBackFrom: string | undefined;
  /** Our last restart, the rollback, has not finished rolling. */
  inFlight: boolean;
  /** The revision our last restart recorded: the rollback's. */
  restartedRevision: string | undefined;
  /** The owner's pods at the target: with a rollback from it, the failed revision's pods. */
  unready: readonly UnreadyPod[] | undefined;
}

/** The ordinal at the end of a StatefulSet pod's name (`<set>-<ordinal>`), or -1. */
export function ordinalOf(setName: string, podName: string): number {
  const prefix = `${setName}-`;
  if (!podName.startsWith(prefix)) return -1;
  const rest = podName.slice(prefix.length);
  return /^(0|[1-9][0-9]{0,8})$/.test(rest) ? Number(rest) : -1;
}

/**
 * Whether the StatefulSet controller waits for every pod to be Ready before it replaces one:
 * `podManagementPolicy: OrderedReady` (the default) with `updateStrategy: RollingUpdate` (the
 * default). `Parallel` replaces a broken pod by itself; `OnDelete` replaces nothing and is never
 * restarted by a wave, so never rolled back either.
 */
export function waitsForReady(set: StatefulSetObject): boolean {
  const policy = set.spec?.podManagementPolicy;
  const strategy = set.spec?.updateStrategy?.type;
  return (policy === undefined || policy === 'OrderedReady') && strategy !== 'OnDelete';
}

/**
 * Every pod of the set but the stuck ones is Ready, as the StatefulSet's own status says (for
 * its current generation): the replacement of a pod deleted before is up, so the next may go.
 */
function othersReady(set: StatefulSetObject, stuck: number): boolean {
  const generation = set.metadata?.generation;
  const status = set.status ?? {};
  if (generation !== undefined && (status.observedGeneration ?? 0) < generation) return false;
  const desired = set.spec?.replicas ?? 1;
  return (status.readyReplicas ?? 0) >= desired - stuck;
}

/**
 * A StatefulSet that waits for Ready pods, rolled back by us from the current revision, whose
 * rollback is still rolling: its pods at the current revision are the failed revision's.
 */
function applies(input: StuckInput): boolean {
  const { workload, target } = input;
  return (
    workload.kind === 'StatefulSet' &&
    waitsForReady(workload) &&
    target !== NO_REVISION &&
    input.rolledBackFrom === target &&
    input.inFlight &&
    input.restartedRevision !== target
  );
}

/** The StatefulSet a rollback left degraded, or undefined when it needs nothing of us. */
export function stuckRollback(input: StuckInput): StuckRollback | undefined {
  const { workload, rolledBackFrom } = input;
  if (workload.kind !== 'StatefulSet' || rolledBackFrom === undefined || !applies(input))
    return undefined;
  const name = workload.metadata?.name ?? '';
  const pods = (input.unready ?? [])
    .filter((p) => ordinalOf(name, p.name) >= 0)
    .sort((a, b) => ordinalOf(name, b.name) - ordinalOf(name, a.name));
  const first = pods[0];
  if (first === undefined) return undefined;
  const names = pods.map((p) => p.name).join(', ');
  const why = `${pods.length === 1 ? 'pod' : 'pods'} ${names} not Ready on ${rolledBackFrom}, which OrderedReady never replaces by itself`;
  if (!othersReady(workload, pods.length))
    return {
      from: rolledBackFrom,
      pods,
      next: undefined,
      detail: `rolled back to ${input.restartedRevision ?? 'the last good revision'}; ${why}; waiting for the other pods to be Ready before deleting ${first.name}`,
    };
  return {
    from: rolledBackFrom,
    pods,
    next: first,
    detail: `rolled back to ${input.restartedRevision ?? 'the last good revision'}; ${why}`,
  };
}
