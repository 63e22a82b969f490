// The three workload kinds Outrigger rolls, behind one client: the generated API has a method per
// kind and verb, and every caller (the controller's watches and wave, the CLI) needs the same
// switch over them.

import {
  PatchStrategy,
  setHeaderOptions,
  type AppsV1Api,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

export interface WorkloadClient {
  /** Every object of the kind, in one namespace or in all. */
  list(namespace?: string): Promise<KubernetesListObject<KubernetesObject>>;
  read(namespace: string, name: string): Promise<KubernetesObject>;
  /** A JSON merge patch (null deletes a key), as `fieldManager`. */
  mergePatch(o: {
    namespace: string;
    name: string;
    body: object;
    fieldManager: string;
  }): Promise<KubernetesObject>;
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * The typed client hands times back as Date objects where the wire (and a watch) has strings:
 * a plain-JSON copy gives every cached or compared object the one shape.
 */
export const plainJson = <T>(object: T): T => JSON.parse(JSON.stringify(object)) as T;

export function workloadClient(apps: AppsV1Api, kind: WorkloadKind): WorkloadClient {
  switch (kind) {
    case 'Deployment':
      return {
        list: (namespace) =>
          namespace
            ? apps.listNamespacedDeployment({ namespace })
            : apps.listDeploymentForAllNamespaces(),
        read: (namespace, name) => apps.readNamespacedDeployment({ namespace, name }),
        mergePatch: (o) => apps.patchNamespacedDeployment(o, MERGE_PATCH),
      };
    case 'StatefulSet':
      return {
        list: (namespace) =>
          namespace
            ? apps.listNamespacedStatefulSet({ namespace })
            : apps.listStatefulSetForAllNamespaces(),
        read: (namespace, name) => apps.readNamespacedStatefulSet({ namespace, name }),
        mergePatch: (o) => apps.patchNamespacedStatefulSet(o, MERGE_PATCH),
      };
    case 'DaemonSet':
      return {
        list: (namespace) =>
          namespace
            ? apps.listNamespacedDaemonSet({ namespace })
            : apps.listDaemonSetForAllNamespaces(),
        read: (namespace, name) => apps.readNamespacedDaemonSet({ namespace, name }),
        mergePatch: (o) => apps.patchNamespacedDaemonSet(o, MERGE_PATCH),
      };
  }
}
