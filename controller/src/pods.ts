// The pods the controller looks at, and only those: never every pod of the cluster. Two label
// selected watches: escaped pods (stamped, never seen by the webhook), and injected pods on a
// revision other than the current one (or, when opting out sheds sidecars, every injected pod,
// as those in opted-out namespaces must be found at any revision). Each pod counts for the owner
// named by its stamp or its ownerReferences.

import type { V1Pod } from '@kubernetes/client-node';
import {
  ESCAPED_POD_SELECTOR,
  REVISION,
  isStampedKind,
  resolveOwner,
  type PodLike,
} from '@outrigger/shared';
import { ownerKey, type PodCounts } from '@outrigger/shared';

/** The selector of injected pods worth a look, for the revision and the shed setting. */
export function injectedPodSelector(revision: string, restartOnOptOut: boolean): string {
  return restartOnOptOut ? REVISION : `${REVISION},${REVISION}!=${revision}`;
}

export { ESCAPED_POD_SELECTOR };

const EMPTY: PodCounts = { escaped: 0, outdated: 0, injected: 0 };

/** The owner key (namespace/Kind/name) a pod counts for, or undefined for other owners. */
export function podOwnerKey(pod: V1Pod): string | undefined {
  // The client's V1Pod and the core's PodLike differ only in PodLike's open index signature.
  const owner = resolveOwner(pod as PodLike);
  if (!isStampedKind(owner.kind)) return undefined;
  const namespace = pod.metadata?.namespace ?? '';
  return ownerKey({ namespace, kind: owner.kind, name: owner.name });
}

const live = (pod: V1Pod): boolean => !pod.metadata?.deletionTimestamp;

export interface PodSets {
  escaped: Iterable<V1Pod>;
  injected: Iterable<V1Pod>;
}

/** Counts per owner key from the two watched sets (pure). Pods being deleted do not count. */
export function countPods(pods: PodSets, revision: string): Map<string, PodCounts> {
  const counts = new Map<string, PodCounts>();
  const bump = (pod: V1Pod, field: keyof PodCounts): void => {
    const key = podOwnerKey(pod);
    if (key === undefined) return;
    const c = counts.get(key) ?? { ...EMPTY };
    c[field] += 1;
    counts.set(key, c);
  };
  for (const pod of pods.escaped) if (live(pod)) bump(pod, 'escaped');
  for (const pod of pods.injected) {
    if (!live(pod)) continue;
    bump(pod, 'injected');
    if (pod.metadata?.labels?.[REVISION] !== revision) bump(pod, 'outdated');
  }
  return counts;
}

export const noPods = (): PodCounts => ({ ...EMPTY });
