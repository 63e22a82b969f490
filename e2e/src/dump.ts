// What a namespace looked like when a test failed: its workloads, pods, events and the last lines
// of its containers' logs as YAML in the run's log folder, for reading after the namespace is gone.

import type { V1Pod } from '@kubernetes/client-node';
import { writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';
import type { Cluster } from './cluster';
import { freshPath, logDir } from './log-dir';

async function listSafely(list: () => Promise<{ items: unknown[] }>): Promise<unknown[] | string> {
  try {
    return (await list()).items;
  } catch (error) {
    return `listing failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** The last lines each container of the namespace's pods logged: the controller's say why. */
async function containerLogs(cluster: Cluster, pods: unknown[] | string): Promise<unknown> {
  if (typeof pods === 'string') return pods;
  const logs: Record<string, string> = {};
  for (const pod of pods as V1Pod[]) {
    const name = pod.metadata?.name ?? '';
    const namespace = pod.metadata?.namespace ?? '';
    for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
      logs[`${name}/${c.name}`] = await cluster.core
        .readNamespacedPodLog({ name, namespace, container: c.name, tailLines: 300 })
        .catch(
          (error: unknown) => `no log: ${error instanceof Error ? error.message : String(error)}`,
        );
    }
  }
  return logs;
}

/** Writes dumps/<namespace>.yaml in the run's log folder and returns its path. */
export async function dumpNamespace(cluster: Cluster, namespace: string): Promise<string> {
  const args = { namespace };
  const dump = {
    namespace,
    at: new Date().toISOString(),
    deployments: await listSafely(() => cluster.apps.listNamespacedDeployment(args)),
    replicaSets: await listSafely(() => cluster.apps.listNamespacedReplicaSet(args)),
    statefulSets: await listSafely(() => cluster.apps.listNamespacedStatefulSet(args)),
    daemonSets: await listSafely(() => cluster.apps.listNamespacedDaemonSet(args)),
    pods: await listSafely(() => cluster.core.listNamespacedPod(args)),
    events: await listSafely(() => cluster.core.listNamespacedEvent(args)),
    logs: {} as unknown,
  };
  dump.logs = await containerLogs(cluster, dump.pods);
  const file = freshPath(logDir('dumps'), namespace, '.yaml');
  // Through JSON: the client's objects hold Dates and class instances. managedFields only add noise.
  const plain: unknown = JSON.parse(
    JSON.stringify(dump, (key, value: unknown) => (key === 'managedFields' ? undefined : value)),
  );
  await writeFile(file, stringify(plain));
  console.warn(`namespace ${namespace} failed a test; its objects and events: ${file}`);
  return file;
}

/** Runs `body`; when it fails, `namespaces` are dumped to the run's log folder first. */
export async function dumpingOnFailure(
  cluster: Cluster,
  namespaces: readonly string[],
  body: () => Promise<void>,
): Promise<void> {
  try {
    await body();
  } catch (error) {
    await Promise.all(namespaces.map((ns) => dumpNamespace(cluster, ns).catch(() => undefined)));
    throw error;
  }
}
