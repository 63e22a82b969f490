// `outrigger status`, `outrigger restart` and `outrigger resume`: the operating commands, against
// any cluster by the usual kubeconfig rules (--kubeconfig, --context, KUBECONFIG, ~/.kube/config).

import {
  ESCAPED_POD_SELECTOR,
  DEFAULT_SET,
  RESUME,
  REVISION,
  setWaveKeys,
  STAMPED_KINDS,
  formatTime,
  namespaceMeta,
  readConfigMap,
  restartPatch,
  type KubeObject,
  type NamespaceMeta,
  type PodLike,
} from '@outrigger/shared';
import { fleetStatus, formatFleet, type FleetRow, type FleetStatus } from './fleet';
import { apiErrorMessage, workloadClient, type KubeApi, type ObjectRef } from '@outrigger/kube';
import { configMapPath, namespacePath, podsPath } from './api-paths';
import { clusterFlags, connectCluster, FLEET_FLAGS, parseClusterArgs } from './cluster-flags';
import { ClusterError, UsageError, type Io } from './io';

export const FLEET_USAGE = `Usage: outrigger status [-n NAMESPACE] [-o wide|json]   one line per workload in opted-in namespaces
       outrigger restart -n NAMESPACE [KIND/NAME...]     restart due owners now (for rollout.mode manual)
       outrigger resume [SET]                            resume a wave a stalled rollout stopped (a sidecar set's, named)
${FLEET_FLAGS}`;

const FIELD_MANAGER = 'outrigger-cli';

interface Cluster {
  api: KubeApi;
  configMap: ObjectRef;
}

/** As much of a ConfigMap as the commands read. */
interface ConfigMap {
  metadata?: { annotations?: Record<string, string> };
  data?: Record<string, string>;
}

type NamespaceObject = Parameters<typeof namespaceMeta>[0];

function connect(values: Parameters<typeof clusterFlags>[0]): Cluster {
  const flags = clusterFlags(values);
  return { api: connectCluster(flags).api, configMap: flags.configMap };
}

async function readConfig(cluster: Cluster) {
  const { namespace, name } = cluster.configMap;
  const cm = await cluster.api.get<ConfigMap>(configMapPath(namespace, name));
  // Not the defaults for a missing key: that would restart owners to a revision nobody chose.
  const reading = readConfigMap(cm, cluster.configMap);
  if (!('ok' in reading)) throw new ClusterError(reading.message);
  return {
    config: reading.config,
    revision: reading.revision,
    annotations: cm.metadata?.annotations,
  };
}

async function listWorkloads(cluster: Cluster, namespace: string | undefined) {
  const lists = await Promise.all(
    STAMPED_KINDS.map(async (kind) => {
      const items = (await workloadClient(cluster.api, kind).list(namespace)).items;
      return { kind, items: items as KubeObject[] };
    }),
  );
  return lists.flatMap(({ kind, items }) => items.map((object) => ({ kind, object })));
}

async function listNamespaces(
  cluster: Cluster,
  only: string | undefined,
): Promise<NamespaceMeta[]> {
  const items = only
    ? [await cluster.api.get<NamespaceObject>(namespacePath(only))]
    : (await cluster.api.get<{ items: NamespaceObject[] }>(namespacePath())).items;
  return items.map(namespaceMeta);
}

/**
 * The pods that decide the plan. Without a namespace, every pod. With one, that namespace's
 * pods (its rows count them all) and, everywhere else, the pods that can make an owner due:
 * the injected ones and those that escaped injection. The wave's budget is cluster-wide, so an
 * owner elsewhere with pods to heal takes a slot that a row here would otherwise be given.
 */
async function listPods(cluster: Cluster, namespace: string | undefined): Promise<PodLike[]> {
  const list = (path: string, labelSelector?: string) =>
    cluster.api.get<{ items: PodLike[] }>(path, { labelSelector });
  if (!namespace) return (await list(podsPath())).items;
  const [own, injected, escaped] = await Promise.all([
    list(podsPath(namespace)),
    list(podsPath(), REVISION),
    list(podsPath(), ESCAPED_POD_SELECTOR),
  ]);
  const elsewhere = [...injected.items, ...escaped.items].filter(
    (p) => p.metadata?.namespace !== namespace,
  );
  return [...own.items, ...elsewhere];
}

/**
 * The wave is cluster-wide (its budget, its stop), so every workload is planned, with the pods
 * that decide it (listPods); with -n only that namespace's rows are shown.
 */
async function status(cluster: Cluster, namespace: string | undefined): Promise<FleetStatus> {
  const [{ config, revision, annotations }, namespaces, workloads, pods] = await Promise.all([
    readConfig(cluster),
    listNamespaces(cluster, undefined),
    listWorkloads(cluster, undefined),
    listPods(cluster, namespace),
  ]);
  if (namespace && !namespaces.some((n) => n.name === namespace))
    throw new ClusterError(`namespace ${namespace} not found`);
  const fleet = fleetStatus({
    config,
    revision,
    configMapAnnotations: annotations,
    namespaces,
    workloads,
    pods,
    nowMs: Date.now(),
    systemNamespace: cluster.configMap.namespace,
  });
  return namespace
    ? { ...fleet, rows: fleet.rows.filter((r) => r.namespace === namespace) }
    : fleet;
}

export async function statusCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseClusterArgs(args);
  if (positionals.length > 0) throw new UsageError(`status takes no arguments\n\n${FLEET_USAGE}`);
  const output = values.output ?? 'table';
  if (!['table', 'wide', 'json'].includes(output))
    throw new UsageError(`-o must be wide or json; got ${output}`);
  const result = await status(connect(values), values.namespace);
  io.stdout(
    output === 'json'
      ? `${JSON.stringify(result, null, 2)}\n`
      : formatFleet(result, output === 'wide'),
  );
  return 0;
}

/** The owners a restart names, or every owner with a restart due in the namespace. */
function chosen(rows: FleetRow[], names: string[]): FleetRow[] {
  if (names.length === 0)
    return rows.filter((r) => r.action === 'restart' || r.reason === 'manual-mode');
  return names.map((n) => {
    const [kind = '', name = ''] = n.split('/');
    const row = rows.find((r) => r.kind.toLowerCase() === kind.toLowerCase() && r.name === name);
    if (!row)
      throw new UsageError(
        `${n}: no such workload in scope; name it as KIND/NAME, such as deployment/web`,
      );
    return row;
  });
}

export async function restartCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseClusterArgs(args);
  if (!values.namespace) throw new UsageError(`restart needs -n NAMESPACE\n\n${FLEET_USAGE}`);
  const c = connect(values);
  const fleet = await status(c, values.namespace);
  let failed = 0;
  for (const row of chosen(fleet.rows, positionals)) {
    if (row.state !== 'outdated' && row.state !== 'escaped') {
      io.stdout(`${row.kind}/${row.name}: ${row.state}, nothing to restart\n`);
      continue;
    }
    failed += await restartOne(c, row, fleet.revision, io);
  }
  return failed > 0 ? 1 : 0;
}

async function restartOne(
  cluster: Cluster,
  row: FleetRow,
  revision: string,
  io: Io,
): Promise<number> {
  const args = { namespace: row.namespace, name: row.name };
  const kind = row.state === 'escaped' ? 'heal' : 'rollout';
  try {
    const client = workloadClient(cluster.api, row.kind);
    const current = (await client.read(row.namespace, row.name)) as KubeObject;
    const workload = { ...current, apiVersion: 'apps/v1', kind: row.kind } as Parameters<
      typeof restartPatch
    >[0]['workload'];
    const body = restartPatch({
      workload,
      order: { owner: row, kind, revision },
      nowMs: Date.now(),
    });
    await client.mergePatch({ ...args, body, fieldManager: FIELD_MANAGER });
    io.stdout(`${row.kind}/${row.name}: restarted (${kind}) to revision ${revision}\n`);
    return 0;
  } catch (err) {
    io.stderr(`${row.kind}/${row.name}: not restarted: ${apiErrorMessage(err)}\n`);
    return 1;
  }
}

/** A configured set's resume key; a name the configuration has no set of is a usage error. */
async function setResumeKey(c: Cluster, set: string): Promise<string> {
  const names = (await readConfig(c)).config.sets.map((s) => s.name);
  if (!names.includes(set))
    throw new UsageError(
      `the configuration has no sidecar set ${set}; its sets: ${names.length > 0 ? names.join(', ') : 'none'} (without a name, resume resumes the proxy's wave)`,
    );
  return setWaveKeys(set).resume;
}

export async function resumeCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseClusterArgs(args);
  if (positionals.length > 1)
    throw new UsageError(`resume takes at most one sidecar set's name\n\n${FLEET_USAGE}`);
  const [set = DEFAULT_SET] = positionals;
  const c = connect(values);
  const key = set === DEFAULT_SET ? RESUME : await setResumeKey(c, set);
  const at = formatTime(Date.now());
  await c.api.patch(
    configMapPath(c.configMap.namespace, c.configMap.name),
    { metadata: { annotations: { [key]: at } } },
    'merge',
    { fieldManager: FIELD_MANAGER },
  );
  const which = set === DEFAULT_SET ? 'the wave' : `the wave of set ${set}`;
  io.stdout(
    `asked the controller to resume ${which} (${key}=${at} on ConfigMap ${c.configMap.namespace}/${c.configMap.name})\n`,
  );
  return 0;
}
