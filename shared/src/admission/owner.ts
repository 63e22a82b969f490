// Who owns a pod: from the stamp the controller writes into templates, or else from the
// pod's ownerReferences, resolving a ReplicaSet to its Deployment by name, without an API call.

import { OWNER_KIND, OWNER_NAME } from '../names';
import type { OwnerReference, PodLike } from '../kubernetes/k8s';

export type OwnerSource = 'stamp' | 'owner-reference' | 'template' | 'none';

export interface Owner {
  kind: string;
  name: string;
  /** Where the answer came from: the stamp, the pod's ownerReferences, the workload a
   * template belongs to, or nowhere (a bare pod owns itself). */
  source: OwnerSource;
}

const POD_TEMPLATE_HASH = 'pod-template-hash';

export function controllerReference(
  refs: readonly OwnerReference[] | undefined,
): OwnerReference | undefined {
  if (!refs || refs.length === 0) return undefined;
  return refs.find((r) => r.controller === true) ?? refs[0];
}

/** A Deployment's ReplicaSet is named `<deployment>-<pod-template-hash>`. */
export function deploymentOfReplicaSet(
  replicaSetName: string,
  podTemplateHash: string | undefined,
): string | undefined {
  if (!podTemplateHash) return undefined;
  const suffix = `-${podTemplateHash}`;
  if (!replicaSetName.endsWith(suffix) || replicaSetName.length === suffix.length) return undefined;
  return replicaSetName.slice(0, -suffix.length);
}

export function resolveOwner(pod: PodLike): Owner {
  const meta = pod.metadata ?? {};
  const kind = meta.annotations?.[OWNER_KIND];
  const name = meta.annotations?.[OWNER_NAME];
  if (kind && name) return { kind, name, source: 'stamp' };

  const ref = controllerReference(meta.ownerReferences);
  if (ref) {
    if (ref.kind === 'ReplicaSet') {
      const deployment = deploymentOfReplicaSet(ref.name, meta.labels?.[POD_TEMPLATE_HASH]);
      if (deployment) return { kind: 'Deployment', name: deployment, source: 'owner-reference' };
    }
    return { kind: ref.kind, name: ref.name, source: 'owner-reference' };
  }
  return { kind: 'Pod', name: meta.name ?? meta.generateName ?? '', source: 'none' };
}

/** Owners whose pods run to completion: a classic sidecar would keep them from finishing. */
export function runsToCompletion(owner: Owner): boolean {
  return owner.kind === 'Job' || owner.kind === 'CronJob';
}
