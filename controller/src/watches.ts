// Every watch the controller keeps, each a ResilientWatch (restarts on errors and silence,
// re-lists periodically, counts restarts): namespaces, the three workload kinds cluster-wide,
// the configuration ConfigMap by name, and two label-selected sets of pods. The injected-pod
// selector names the current revision, so that watch is replaced when the revision changes.

import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type V1ConfigMap,
  type V1Namespace,
  type V1Pod,
} from '@kubernetes/client-node';
import { ResilientWatch } from '@outrigger/kube';
import { ESCAPED_POD_SELECTOR, type StampedKind } from '@outrigger/shared';
import type { Controller } from './controller';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';

export interface WatchDeps {
  kc: KubeConfig;
  controller: Controller;
  logger: Logger;
  metrics: ControllerMetrics;
}

/** Re-list this often even when a watch looks healthy (client-go's informers resync too). */
export const RESYNC_MS = 10 * 60_000;

/**
 * The typed client turns times into Date objects on lists while watch events carry the wire's
 * strings: lists are turned back into plain JSON so every cached object has one shape.
 */
async function plainList<T extends KubernetesObject>(
  list: Promise<KubernetesListObject<T>>,
): Promise<KubernetesListObject<T>> {
  const result = await list;
  return { ...result, items: JSON.parse(JSON.stringify(result.items)) as T[] };
}

function watch<T extends KubernetesObject>(
  d: WatchDeps,
  o: {
    path: string;
    resource: string;
    list: () => Promise<KubernetesListObject<T>>;
    onChange: (items: readonly T[]) => void;
    fieldSelector?: string;
    labelSelector?: string;
  },
): ResilientWatch<T> {
  return new ResilientWatch<T>({
    kc: d.kc,
    path: o.path,
    list: () => plainList(o.list()),
    fieldSelector: o.fieldSelector,
    labelSelector: o.labelSelector,
    onChange: o.onChange,
    onRestart: (reason) => d.metrics.watchRestarts.inc({ resource: o.resource, reason }),
    logger: d.logger,
    resource: o.resource,
    resyncMs: RESYNC_MS,
  });
}

const WORKLOAD_PATHS: Record<StampedKind, string> = {
  Deployment: 'deployments',
  StatefulSet: 'statefulsets',
  DaemonSet: 'daemonsets',
};

function workloadWatch(d: WatchDeps, kind: StampedKind): ResilientWatch<KubernetesObject> {
  const apps = d.kc.makeApiClient(AppsV1Api);
  const list = (): Promise<KubernetesListObject<KubernetesObject>> => {
    switch (kind) {
      case 'Deployment':
        return apps.listDeploymentForAllNamespaces();
      case 'StatefulSet':
        return apps.listStatefulSetForAllNamespaces();
      case 'DaemonSet':
        return apps.listDaemonSetForAllNamespaces();
    }
  };
  return watch<KubernetesObject>(d, {
    path: `/apis/apps/v1/${WORKLOAD_PATHS[kind]}`,
    resource: WORKLOAD_PATHS[kind],
    list,
    onChange: (items) => d.controller.onWorkloads(kind, items),
  });
}

export function podWatch(
  d: WatchDeps,
  which: 'escaped' | 'injected',
  labelSelector: string,
): ResilientWatch<V1Pod> {
  const core = d.kc.makeApiClient(CoreV1Api);
  return watch<V1Pod>(d, {
    path: '/api/v1/pods',
    resource: `pods (${which})`,
    labelSelector,
    list: () => core.listPodForAllNamespaces({ labelSelector }),
    onChange: (items) => d.controller.onPods(which, items),
  });
}

/** The watches whose selectors never change. */
export function fixedWatches(d: WatchDeps): ResilientWatch<KubernetesObject>[] {
  const core = d.kc.makeApiClient(CoreV1Api);
  const ref = d.controller.config.ref;
  const byName = `metadata.name=${ref.name}`;
  return [
    watch<V1ConfigMap>(d, {
      path: `/api/v1/namespaces/${ref.namespace}/configmaps`,
      resource: 'configmaps',
      fieldSelector: byName,
      list: () => core.listNamespacedConfigMap({ namespace: ref.namespace, fieldSelector: byName }),
      onChange: (items) => d.controller.onConfigMap(items),
    }),
    watch<V1Namespace>(d, {
      path: '/api/v1/namespaces',
      resource: 'namespaces',
      list: () => core.listNamespace(),
      onChange: (items) => d.controller.onNamespaces(items),
    }),
    workloadWatch(d, 'Deployment'),
    workloadWatch(d, 'StatefulSet'),
    workloadWatch(d, 'DaemonSet'),
    podWatch(d, 'escaped', ESCAPED_POD_SELECTOR),
  ] as ResilientWatch<KubernetesObject>[];
}
