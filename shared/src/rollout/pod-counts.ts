// The pods of each owner, counted the one way the controller and `outrigger status` both count
// them: a pod counts for the owner its stamp or its ownerReferences name (a ReplicaSet's for
// its Deployment); one being deleted does not count; an injected pod is outdated unless it runs
// the current revision, and the health gate's view of those that do is kept beside the counts;
// an escaped pod is stamped, not injected and not skipped (what ESCAPED_POD_SELECTOR selects).

import type { Labels, PodLike } from '../kubernetes/k8s';
import { REVISION, SKIPPED, STAMPED } from '../names';
import { resolveOwner } from '../admission/owner';
import { isStampedKind } from '../admission/stamp';
import { countRevisionPod } from './gate';
import { ownerKey, type PodCounts } from './owner-state';

/** Whether a pod's labels say it escaped the webhook: the code form of ESCAPED_POD_SELECTOR. */
export function isEscapedPod(labels: Labels | undefined): boolean {
  return (
    labels?.[STAMPED] === 'true' && labels[REVISION] === undefined && labels[SKIPPED] === undefined
  );
}

/** The owner key (namespace/Kind/name) a pod counts for, or undefined for other owners. */
export function podOwnerKey(pod: PodLike): string | undefined {
  const owner = resolveOwner(pod);
  if (!isStampedKind(owner.kind)) return undefined;
  return ownerKey({ namespace: pod.metadata?.namespace ?? '', kind: owner.kind, name: owner.name });
}

export const noPods = (): PodCounts => ({ escaped: 0, outdated: 0, injected: 0 });

export interface CountOptions<T extends PodCounts> {
  revision: string;
  /**
   * The pod label that carries the revision: the proxy's (REVISION, the default) or a sidecar
   * set's. A set's pods are not counted as escaped: a heal is the proxy's, and brings every set.
   */
  label?: string;
  /** The injected containers, whose health the gate reads. */
  names: { proxy: string; init?: string };
  /** When the wave last restarted an owner, by key: the gate counts restarts since then only. */
  sinceOf?: (key: string) => number | undefined;
  /** A fresh count for an owner (a caller's may carry more than PodCounts). */
  fresh: () => T;
  /** Called with every live pod counted, for what a caller counts besides. */
  also?: (counts: T, pod: PodLike) => void;
}

/** Adds one live pod to its owner's counts. */
function addPod(c: PodCounts, pod: PodLike, revision: string, gate: GateView): void {
  const runs = pod.metadata?.labels?.[gate.label];
  if (runs === undefined) {
    if (gate.label === REVISION && isEscapedPod(pod.metadata?.labels)) c.escaped += 1;
    return;
  }
  c.injected += 1;
  if (runs !== revision) c.outdated += 1;
  else c.atRevision = countRevisionPod(c.atRevision, pod, gate.names, gate.sinceMs);
}

/** What the gate's view of a pod at the revision needs. */
interface GateView {
  label: string;
  names: { proxy: string; init?: string };
  sinceMs: number | undefined;
}

/** Counts per owner key (pure). */
export function countPodsByOwner<T extends PodCounts>(
  pods: Iterable<PodLike>,
  options: CountOptions<T>,
): Map<string, T> {
  const { revision, names, sinceOf, fresh, also, label = REVISION } = options;
  const counts = new Map<string, T>();
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    const key = podOwnerKey(pod);
    if (key === undefined) continue;
    let c = counts.get(key);
    if (!c) counts.set(key, (c = fresh()));
    addPod(c, pod, revision, { label, names, sinceMs: sinceOf?.(key) });
    also?.(c, pod);
  }
  return counts;
}
