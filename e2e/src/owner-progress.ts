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
export function behind(deployment: V1Deployment, revision: string): string | undefined {
  const name = deployment.metadata?.name ?? '?';
  if (templateRevision(deployment) !== revision)
    return `${name}: template at ${templateRevision(deployment)}`;
  if (deployment.metadata?.annotations?.[RESTARTED_REVISION] !== revision)
    return `${name}: not restarted`;
  if (deploymentRolloutStatus(deployment).outcome !== 'done') return `${name}: rolling`;
  if (deployment.metadata?.labels?.[COMPLETED_REVISION] !== revision)
    return `${name}: not recorded`;
  return undefined;
}

/** When the loop first saw an owner's rollout to `revision` complete, and its record of it. */
export function noteCompletion(
  deployment: V1Deployment,
  revision: string,
  seen: { now: number; complete: Map<string, number>; recorded: Map<string, number> },
): void {
  const name = deployment.metadata?.name ?? '';
  // Complete at the revision: nothing behind, or only the controller's record of it.
  const why = behind(deployment, revision);
  if (why !== undefined && !why.endsWith(': not recorded')) return;
  if (!seen.complete.has(name)) seen.complete.set(name, seen.now);
  if (deployment.metadata?.labels?.[COMPLETED_REVISION] === revision && !seen.recorded.has(name)) {
    seen.recorded.set(name, seen.now);
  }
}
