// Pods with the injected proxy really running beside the application: what the in-cluster suite
// and make demo look for on a node that runs containers.

import type { V1Pod } from '@kubernetes/client-node';
import { mustParseConfig } from '@outrigger/shared';
import type { Cluster } from './cluster';
import { done, pending, waitFor } from './wait';

/** The proxy container's name in the default configuration. */
export const PROXY_CONTAINER = mustParseConfig('').proxy.name;

/** The proxy's status in a pod: a native sidecar (init container) or a classic one. */
export function proxyStatus(pod: V1Pod) {
  return [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ].find((s) => s.name === PROXY_CONTAINER);
}

export function podReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Every pod of `selector` Running and Ready, `count` of them, each with its proxy running. */
export async function podsRunningWithProxy(
  cluster: Cluster,
  namespace: string,
  selector: string,
  count: number,
): Promise<V1Pod[]> {
  return waitFor(
    `${count} pods (${selector}) in ${namespace} Running and Ready with ${PROXY_CONTAINER} running`,
    async () => {
      const pods = (
        await cluster.core.listNamespacedPod({ namespace, labelSelector: selector })
      ).items.filter((p) => !p.metadata?.deletionTimestamp);
      const good = pods.filter(
        (p) => p.status?.phase === 'Running' && podReady(p) && proxyStatus(p)?.state?.running,
      );
      if (good.length === count && pods.length === count) return done(pods);
      return pending(
        pods.map((p) => ({
          name: p.metadata?.name,
          phase: p.status?.phase,
          ready: podReady(p),
          proxy: proxyStatus(p)?.state,
          waiting: p.status?.containerStatuses?.map((c) => c.state?.waiting?.reason),
        })),
      );
    },
    { timeoutMs: 180_000, intervalMs: 1000 },
  );
}

export const containerNames = (pod: V1Pod): string[] => [
  ...(pod.spec?.initContainers ?? []).map((c) => c.name),
  ...(pod.spec?.containers.map((c) => c.name) ?? []),
];

/**
 * Waits until the webhook injects `container` into a new pod of `namespace` (a server-side dry
 * run): it applies a new configuration when it sees the ConfigMap, and a workload made before
 * would get the previous one.
 */
export async function webhookInjects(
  cluster: Cluster,
  namespace: string,
  container: string,
): Promise<void> {
  await waitFor(`the webhook to inject ${container}`, async () => {
    const pod = await cluster.core.createNamespacedPod({
      namespace,
      dryRun: 'All',
      body: {
        metadata: { generateName: 'probe-', labels: { app: 'probe' } },
        spec: { containers: [{ name: 'probe', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });
    return containerNames(pod).includes(container) ? done(undefined) : pending(containerNames(pod));
  });
}
