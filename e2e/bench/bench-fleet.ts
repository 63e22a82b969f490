// The bench's fleet: Deployments grown size by size through the webhook, and the fake kwok node
// the first size's pods run on.

import type { V1Deployment } from '@kubernetes/client-node';
import { ENABLED, INJECTION_LABEL } from '@outrigger/shared';
import { done, pending, waitFor, type Cluster, type TestInstall } from '../src';

/** The fake node; removed at the end of a run. */
export const BENCH_NODE = 'outrigger-bench-kwok';
const PER_NAMESPACE = 20;

/** Runs `work` over `items` with at most `limit` at once. */
export async function pool<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
) {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function deployment(name: string, replicas: number): V1Deployment {
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: { 'outrigger.dev/bench': 'true' },
          tolerations: [{ operator: 'Exists' }],
          containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
        },
      },
    },
  };
}

/** A fake node (kwok) with room for the first size's pods; removed at the end. */
export async function benchNode(cluster: Cluster): Promise<void> {
  const room = { cpu: '1000', memory: '4Ti', pods: '20000' };
  // Left behind by a run that was killed: it is the same node.
  await cluster.core.deleteNode({ name: BENCH_NODE }).catch(() => undefined);
  await cluster.core.createNode({
    body: {
      metadata: {
        name: BENCH_NODE,
        annotations: { 'kwok.x-k8s.io/node': 'fake' },
        labels: { type: 'kwok', 'outrigger.dev/bench': 'true' },
      },
      status: { allocatable: room, capacity: room },
    },
  });
}

export interface Fleet {
  namespaces: string[];
  names: { namespace: string; name: string }[];
}

/**
 * Grows the fleet to `size` Deployments, 20 to an opted-in namespace, created through the
 * webhook; the first size's have `replicas` pods each, later ones none.
 */
export async function grow(
  install: TestInstall,
  fleet: Fleet,
  size: number,
  replicas: number,
): Promise<void> {
  const first = fleet.names.length === 0;
  const wanted = Math.ceil(size / PER_NAMESPACE);
  const fresh = [...Array(wanted - fleet.namespaces.length).keys()];
  await pool(fresh, 10, async (i) => {
    // Labelled as the controller would, so the webhook stamps every Deployment on create.
    const ns = await install.newNamespace(`bench-${fleet.namespaces.length + i}`, {
      optedIn: true,
      labels: { [INJECTION_LABEL]: ENABLED },
    });
    fleet.namespaces.push(ns);
  });
  const work = [...Array(size - fleet.names.length).keys()].map((i) => {
    const n = fleet.names.length + i;
    return { namespace: fleet.namespaces[n % wanted] ?? '', name: `d${n}` };
  });
  await pool(work, 20, async (w) => {
    const body = deployment(w.name, first ? replicas : 0);
    await install.cluster.apps.createNamespacedDeployment({ namespace: w.namespace, body });
  });
  fleet.names.push(...work);
}

/** Waits until kube-controller-manager observed every Deployment and their pods are ready. */
export async function settle(cluster: Cluster): Promise<number> {
  const start = performance.now();
  await waitFor(
    'kube-controller-manager to observe every Deployment, and their pods to be ready',
    async () => {
      const { items } = await cluster.apps.listDeploymentForAllNamespaces();
      const behind = items.filter(
        (d) =>
          (d.status?.observedGeneration ?? 0) < (d.metadata?.generation ?? 0) ||
          (d.status?.readyReplicas ?? 0) < (d.spec?.replicas ?? 0),
      ).length;
      return behind === 0 ? done(undefined) : pending(behind);
    },
    { timeoutMs: 60 * 60_000, intervalMs: 3000 },
  );
  return performance.now() - start;
}
