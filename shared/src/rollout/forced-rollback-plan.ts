// What a wave does about a StatefulSet its rollback left degraded (forced-rollback.ts decides
// which pod): the owner's report says so, and with `rollout.forceRollback` the plan deletes the
// next stuck pod; without it, the report names the pods an admin should delete. Once the pods
// are replaced, the report keeps saying what the forced rollback did, from its record on the
// owner.

import { describeForced } from './forced-rollback';
import type { UnreadyPod } from './gate';
import type { OwnerAssessment, OwnerRef } from './owner-state';

/** A pod to delete to finish a rollback: its owner and the pod. */
export interface PodDeletion {
  owner: OwnerRef;
  pod: UnreadyPod;
  /** The revision the pod runs, which the owner was rolled back from. */
  from: string;
  detail: string;
}

/** An owner and its verdict, as the planner holds them. */
interface Judgement {
  a: OwnerAssessment;
  v: { stopped?: boolean; reason: string; detail: string };
}

/** What to do about the stuck pods, in words. */
function action(a: OwnerAssessment, force: boolean, podsSynced: boolean): string {
  const stuck = a.stuck;
  if (!stuck) return '';
  const names = stuck.pods.map((p) => p.name).join(' ');
  if (!force)
    return `rollout.forceRollback is off: delete them by hand (kubectl delete pod -n ${a.owner.namespace} ${names})`;
  if (!stuck.next) return 'deleting them one at a time';
  if (!podsSynced) return 'deleting them once the pods are listed';
  return `deleting ${stuck.next.name} so that the StatefulSet recreates it (a forced rollback)`;
}

/**
 * For owners held by their rollback (`v.stopped`): the forced rollback's report, and the pods
 * to delete now. Deletes nothing while the pods at the revision are not all listed.
 */
export function finishRollbacks<J extends Judgement>(
  judged: readonly J[],
  force: boolean,
  podsSynced: boolean,
): { judged: J[]; deletePods: PodDeletion[] } {
  const deletePods: PodDeletion[] = [];
  const out = judged.map((j): J => {
    const { a, v } = j;
    if (!v.stopped) return j;
    const stuck = a.stuck;
    if (!stuck) {
      const forced = a.forced?.from === a.rolledBackFrom ? a.forced : undefined;
      return forced ? { ...j, v: { ...v, detail: `${v.detail}; ${describeForced(forced)}` } } : j;
    }
    if (force && podsSynced && stuck.next)
      deletePods.push({ owner: a.owner, pod: stuck.next, from: stuck.from, detail: stuck.detail });
    const detail = `${stuck.detail}; ${action(a, force, podsSynced)}`;
    return { ...j, v: { ...v, reason: 'forced-rollback', detail } };
  });
  return { judged: out, deletePods };
}
