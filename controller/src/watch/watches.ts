// Every watch the controller keeps, each a ResilientWatch (restarts on errors and silence,
// re-lists periodically, counts restarts): namespaces, the three workload kinds cluster-wide,
// the configuration ConfigMap by name, and two label-selected sets of pods. The big ones keep
// only what the controller reads of each object (slim.ts) and hand it what changed. The
// injected-pod selector names the current revision, so that watch is replaced when it changes.

import type {
  KubernetesObject,
  V1ConfigMap,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';
import {
  ResilientWatch,
  WORKLOAD_RESOURCES,
  workloadPath,
  type KubeApi,
  type Keyed,
  type ObjectRef,
  type WatchDelta,
} from '@outrigger/kube';
import {
  CA_SECRET_NAME,
  ESCAPED_POD_SELECTOR,
  TLS_SECRET_NAME,
  type StampedKind,
  type Workload,
} from '@outrigger/shared';
import type { CertificateFlags } from '../flags';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import type { PodSet } from './owner-index';
import { slimNamespace, slimPod, slimWorkload } from './slim';

/** What the watches read their scope from and hand their changes to: the controller. */
export interface WatchHandler {
  readonly configMapRef: ObjectRef;
  readonly historyRef: ObjectRef;
  readonly systemNamespace: string;
  readonly certificateFlags: CertificateFlags | undefined;
  onNamespaces(delta: WatchDelta<V1Namespace>): void;
  onWorkloads(kind: StampedKind, delta: WatchDelta<Workload>): void;
  /** With `all`, the first list of a watch with a new selector, which replaces the set. */
  onPods(set: PodSet, delta: WatchDelta<V1Pod>, all?: Iterable<V1Pod>): void;
  onConfigMap(items: readonly V1ConfigMap[]): void;
  onHistory(items: readonly V1ConfigMap[]): void;
  onCertificateSecrets(items: readonly V1Secret[]): void;
  onWebhookConfigurations(items: readonly V1MutatingWebhookConfiguration[]): void;
}

export interface WatchDeps {
  api: KubeApi;
  controller: WatchHandler;
  logger: Logger;
  metrics: ControllerMetrics;
}

/**
 * Re-list from the API server this often even when a watch looks healthy: a watch that went
 * silent without an error is replaced, and anything a lost event hid is seen again.
 */
export const RESYNC_MS = 10 * 60_000;

function watch<T extends Keyed>(
  deps: WatchDeps,
  options: {
    path: string;
    resource: string;
    transform?: (object: KubernetesObject) => T;
    onChange?: (items: readonly T[]) => void;
    onDelta?: (delta: WatchDelta<T>) => void;
    fieldSelector?: string;
    labelSelector?: string;
  },
): ResilientWatch<T> {
  return new ResilientWatch<T>({
    api: deps.api,
    path: options.path,
    transform: options.transform,
    fieldSelector: options.fieldSelector,
    labelSelector: options.labelSelector,
    onChange: options.onChange,
    onDelta: options.onDelta,
    onRestart: (reason) => deps.metrics.watchRestarts.inc({ resource: options.resource, reason }),
    onEvent: () => deps.metrics.watchEvents.inc({ resource: options.resource }),
    logger: deps.logger,
    resource: options.resource,
    resyncMs: RESYNC_MS,
  });
}

function workloadWatch(deps: WatchDeps, kind: StampedKind): ResilientWatch<Keyed> {
  return watch(deps, {
    path: workloadPath(kind),
    resource: WORKLOAD_RESOURCES[kind],
    transform: slimWorkload(kind),
    onDelta: (delta) => deps.controller.onWorkloads(kind, delta),
  });
}

export function podWatch(
  deps: WatchDeps,
  which: 'escaped' | 'injected',
  labelSelector: string,
): ResilientWatch<V1Pod> {
  let first = true;
  const pods: ResilientWatch<V1Pod> = watch<V1Pod>(deps, {
    path: '/api/v1/pods',
    resource: `pods (${which})`,
    labelSelector,
    transform: slimPod,
    // The first list of a new watch replaces what the watch it replaces had chosen.
    onDelta: (delta) => {
      deps.controller.onPods(which, delta, first ? pods.objects.values() : undefined);
      first = false;
    },
  });
  return pods;
}

/**
 * Self-managed certificates: the two Secrets and the webhook configuration, each watched by name
 * (RBAC grants them by name, and a watch by metadata.name is authorized by it).
 */
export function certificateWatches(deps: WatchDeps): ResilientWatch<KubernetesObject>[] {
  const flags = deps.controller.certificateFlags;
  if (!flags) return [];
  const namespace = deps.controller.systemNamespace;
  const byName = (name: string) => `metadata.name=${name}`;
  const seen = new Map<string, readonly V1Secret[]>();
  const secret = (name: string) =>
    watch<V1Secret>(deps, {
      path: `/api/v1/namespaces/${namespace}/secrets`,
      resource: `secrets (${name})`,
      fieldSelector: byName(name),
      onChange: (items) => {
        // Two watches feed one cache: each replaces its own part.
        seen.set(name, items);
        deps.controller.onCertificateSecrets([...seen.values()].flat());
      },
    });
  const configuration = watch<V1MutatingWebhookConfiguration>(deps, {
    path: '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations',
    resource: 'mutatingwebhookconfigurations',
    fieldSelector: byName(flags.webhookConfiguration),
    onChange: (items) => deps.controller.onWebhookConfigurations(items),
  });
  return [
    secret(CA_SECRET_NAME),
    secret(TLS_SECRET_NAME),
    configuration,
  ] as ResilientWatch<KubernetesObject>[];
}

/** The watches whose selectors never change. */
export function fixedWatches(deps: WatchDeps): ResilientWatch<KubernetesObject>[] {
  const ref = deps.controller.configMapRef;
  const byName = `metadata.name=${ref.name}`;
  const history = deps.controller.historyRef;
  const historyByName = `metadata.name=${history.name}`;
  return [
    watch<V1ConfigMap>(deps, {
      path: `/api/v1/namespaces/${history.namespace}/configmaps`,
      resource: 'configmaps (history)',
      fieldSelector: historyByName,
      onChange: (items) => deps.controller.onHistory(items),
    }),
    watch<V1ConfigMap>(deps, {
      path: `/api/v1/namespaces/${ref.namespace}/configmaps`,
      resource: 'configmaps',
      fieldSelector: byName,
      onChange: (items) => deps.controller.onConfigMap(items),
    }),
    watch(deps, {
      path: '/api/v1/namespaces',
      resource: 'namespaces',
      transform: slimNamespace,
      onDelta: (delta) => deps.controller.onNamespaces(delta),
    }),
    workloadWatch(deps, 'Deployment'),
    workloadWatch(deps, 'StatefulSet'),
    workloadWatch(deps, 'DaemonSet'),
    podWatch(deps, 'escaped', ESCAPED_POD_SELECTOR),
  ] as ResilientWatch<KubernetesObject>[];
}
