// The pods the controller looks at, and only those: never every pod of the cluster. Two label
// selected watches: escaped pods (stamped, never seen by the webhook), and injected pods on a
// revision other than the current one. That second selector widens to every injected pod while
// a wave is under way (the health gate reads the pods at the wave's revision) and when opting
// out sheds sidecars (those in opted-out namespaces must be found at any revision). Each pod
// counts for the owner named by its stamp or its ownerReferences.

import type { V1Pod } from '@kubernetes/client-node';
import {
  ESCAPED_POD_SELECTOR,
  REVISION,
  countRevisionPod,
  isStampedKind,
  resolveOwner,
  type PodLike,
} from '@outrigger/shared';
import { ownerKey, type PodCounts } from '@outrigger/shared';

/** The selector of injected pods worth a look, for the revision, the shed setting and the wave. */
export function injectedPodSelector(
  revision: string,
  restartOnOptOut: boolean,
  judging = false,
): string {
  return restartOnOptOut || judging ? REVISION : `${REVISION},${REVISION}!=${revision}`;
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

type Counted = 'escaped' | 'outdated' | 'injected';

/**
 * Counts per owner key from the two watched sets (pure), and the health of the pods at the
 * revision when the injected set holds them. Pods being deleted do not count. `sinceMs` is when
 * the wave last restarted the owner: the gate counts the proxy's restarts since then only.
 */
export function countPods(
  pods: PodSets,
  revision: string,
  names: { proxy: string; init?: string } = { proxy: 'outrigger-proxy' },
  sinceMs?: number,
): Map<string, PodCounts> {
  const counts = new Map<string, PodCounts>();
  const entry = (key: string): PodCounts => {
    const c = counts.get(key) ?? { ...EMPTY };
    counts.set(key, c);
    return c;
  };
  const bump = (key: string, field: Counted): void => {
    entry(key)[field] += 1;
  };
  for (const pod of pods.escaped) {
    const key = live(pod) ? podOwnerKey(pod) : undefined;
    if (key !== undefined) bump(key, 'escaped');
  }
  for (const pod of pods.injected) {
    const key = live(pod) ? podOwnerKey(pod) : undefined;
    if (key === undefined) continue;
    bump(key, 'injected');
    if (pod.metadata?.labels?.[REVISION] !== revision) bump(key, 'outdated');
    else {
      const c = entry(key);
      c.atRevision = countRevisionPod(c.atRevision, pod as PodLike, names, sinceMs);
    }
  }
  return counts;
}

export const noPods = (): PodCounts => ({ ...EMPTY });
