// Where an owner of a test wave stands against a configuration revision, read from the
// Deployment alone: its template, the controller's restart and completion records, and the
// rollout's own status.

import type { V1Deployment, V1ReplicaSet } from '@kubernetes/client-node';
import { COMPLETED_REVISION, CONFIG_REVISION, RESTARTED_REVISION } from '@outrigger/shared';
import { deploymentRolloutStatus } from './rollout';

/** The configuration revision a Deployment's or ReplicaSet's pod template carries. */
export const templateRevision = (o: V1Deployment | V1ReplicaSet): string | undefined =>
  o.spec?.template?.metadata?.annotations?.[CONFIG_REVISION];

/** Why an owner is not yet on `revision` and complete, or undefined when it is. */
export function behind(d: V1Deployment, revision: string): string | undefined {
  const name = d.metadata?.name ?? '?';
  if (templateRevision(d) !== revision) return `${name}: template at ${templateRevision(d)}`;
  if (d.metadata?.annotations?.[RESTARTED_REVISION] !== revision) return `${name}: not restarted`;
  if (deploymentRolloutStatus(d).outcome !== 'done') return `${name}: rolling`;
  if (d.metadata?.labels?.[COMPLETED_REVISION] !== revision) return `${name}: not recorded`;
  return undefined;
}

/** When the loop first saw an owner's rollout to `revision` complete, and its record of it. */
export function noteCompletion(
  d: V1Deployment,
  revision: string,
  seen: { now: number; complete: Map<string, number>; recorded: Map<string, number> },
): void {
  const name = d.metadata?.name ?? '';
  // Complete at the revision: nothing behind, or only the controller's record of it.
  const why = behind(d, revision);
  if (why !== undefined && !why.endsWith(': not recorded')) return;
  if (!seen.complete.has(name)) seen.complete.set(name, seen.now);
  if (d.metadata?.labels?.[COMPLETED_REVISION] === revision && !seen.recorded.has(name)) {
    seen.recorded.set(name, seen.now);
  }
}
