// The three workload kinds Outrigger rolls, behind one client: their API paths differ only by
// resource, and every caller (the controller's wave, the CLI) needs the same verbs on each.

import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { KubeApi } from './api-client';

export type WorkloadKind = 'Deployment' | 'StatefulSet' | 'DaemonSet';

export const WORKLOAD_RESOURCES: Record<WorkloadKind, string> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
};

/** The path of the kind's objects: in all namespaces, in one, or one object. */
export function workloadPath(kind: WorkloadKind, namespace?: string, name?: string): string {
  const resource = WORKLOAD_RESOURCES[kind];
  if (!namespace) return `/apis/apps/v1/${resource}`;
  return `/apis/apps/v1/namespaces/${namespace}/${resource}${name ? `/${name}` : ''}`;
}

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

/**
 * The typed client hands times back as Date objects where the wire (and a watch) has strings:
 * a plain-JSON copy gives every cached or compared object the one shape.
 */
export const plainJson = <T>(object: T): T => JSON.parse(JSON.stringify(object)) as T;

export function workloadClient(api: KubeApi, kind: WorkloadKind): WorkloadClient {
  const typed = (o: KubernetesObject): KubernetesObject => ({ ...o, apiVersion: 'apps/v1', kind });
  return {
    list: (namespace) => api.get(workloadPath(kind, namespace)),
    read: async (namespace, name) => typed(await api.get(workloadPath(kind, namespace, name))),
    mergePatch: async (o) =>
      typed(
        await api.patch(workloadPath(kind, o.namespace, o.name), o.body, 'merge', {
          fieldManager: o.fieldManager,
        }),
      ),
  };
}
