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
  countPodsByOwner,
  noPods,
  podOwnerKey as ownerKeyOfPod,
  type PodCounts,
  type PodLike,
} from '@outrigger/shared';

/** The selector of injected pods worth a look, for the revision, the shed setting and the wave. */
export function injectedPodSelector(
  revision: string,
  restartOnOptOut: boolean,
  judging = false,
): string {
  return restartOnOptOut || judging ? REVISION : `${REVISION},${REVISION}!=${revision}`;
}

export { ESCAPED_POD_SELECTOR, noPods };

/** The owner key (namespace/Kind/name) a pod counts for, or undefined for other owners. */
// The client's V1Pod and the core's PodLike differ only in PodLike's open index signature.
export const podOwnerKey = (pod: V1Pod): string | undefined => ownerKeyOfPod(pod as PodLike);

export interface PodSets {
  escaped: Iterable<V1Pod>;
  injected: Iterable<V1Pod>;
}

/**
 * Counts per owner key from the two watched sets (pure; shared/src/rollout/pod-counts.ts), and
 * the health of the pods at the revision when the injected set holds them. `sinceMs` is when the
 * wave last restarted the owner: the gate counts the proxy's restarts since then only.
 */
export function countPods(
  pods: PodSets,
  revision: string,
  names: { proxy: string; init?: string } = { proxy: 'outrigger-proxy' },
  sinceMs?: number,
): Map<string, PodCounts> {
  // The two selectors are disjoint (with a revision label, or without): one pass over both.
  const all = function* (): Iterable<PodLike> {
    for (const p of pods.escaped) yield p as PodLike;
    for (const p of pods.injected) yield p as PodLike;
  };
  return countPodsByOwner(all(), { revision, names, sinceOf: () => sinceMs, fresh: noPods });
}
