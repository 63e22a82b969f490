// make demo: Outrigger end to end on the local cluster, narrated. It brings the cluster up,
// installs Outrigger, creates workloads in a namespace and opts it in, shows their pods
// injected, changes the configuration, and follows the wave that rolls them onto the new
// revision. Where this machine runs the cluster's real node (e2e/cluster/node.sh), everything is
// real: the chart installed with helm, its image run by containerd, the sidecar a running demo
// proxy whose log names its revision (chart.ts). Elsewhere kwok's nodes run no containers: the
// two components run here as processes and the pods are kwok's (processes.ts); the demo says so.
// The cluster stays up; `make demo-down` stops it.

import { parse, stringify } from 'yaml';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  ENABLED,
  INJECT,
  REVISION,
  SYSTEM_NAMESPACE,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  E2E_ENV,
  apply,
  connect,
  deleteNamespace,
  deploymentYaml,
  done,
  helm,
  loadKubeConfig,
  pending,
  prepareInCluster,
  prepareLogDir,
  realNodeNamespaceAnnotations,
  repoRoot,
  threeKindsYaml,
  waitFor,
  type Cluster,
} from '../src';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { installWithHelm, printPods, printProxyLog } from './chart';
import {
  currentRevision,
  followWave,
  outriggerStatus,
  podsAt,
  say,
  secondsSinceStart,
} from './narration';
import { demoDir, installAsProcesses, stopDemoProcesses } from './processes';

const run = promisify(execFile);
const NAMESPACE = 'demo';

/** What differs between a demo on the real node and one on kwok's nodes. */
interface Platform {
  install(cluster: Cluster): Promise<void>;
  /** The namespace's workloads, and how the demo names them. */
  workloads: { yaml: string; describe: string; pods: number };
  /** The configuration change that makes a new revision. */
  change: { describe: string; edit(config: Record<string, unknown>): void };
  /** Shows the namespace's pods. */
  show(cluster: Cluster): Promise<void>;
}

const OLD_PROXY = 'ghcr.io/outrigger/proxy:1.0.0';
const NEW_PROXY = 'ghcr.io/outrigger/proxy:1.1.0';

const processesPlatform: Platform = {
  install: installAsProcesses,
  workloads: {
    yaml: threeKindsYaml(2, 2),
    describe: 'a Deployment, a StatefulSet and a DaemonSet (kwok pods: no containers run)',
    pods: 5,
  },
  change: {
    describe: `the proxy image from ${OLD_PROXY} to ${NEW_PROXY}`,
    edit: (config) => {
      config.proxy = { ...(config.proxy as object), image: NEW_PROXY };
    },
  },
  show: async (cluster) => {
    const { items } = await cluster.core.listNamespacedPod({ namespace: NAMESPACE });
    const injected = items.filter((p) => p.metadata?.labels?.[REVISION]).length;
    process.stdout.write(`  ${items.length} pods, ${injected} with the sidecar\n`);
  },
};

function realNodePlatform(install: (cluster: Cluster) => Promise<void>): Platform {
  return {
    install,
    workloads: {
      yaml: `${deploymentYaml('web', { replicas: 2, spec: { minReadySeconds: 2 } })}\n---\n${deploymentYaml('api', { replicas: 1, spec: { minReadySeconds: 2 } })}`,
      describe: 'two Deployments of real containers (the pause program)',
      pods: 3,
    },
    change: {
      describe: 'the proxy log level from info to debug',
      edit: (config) => {
        config.proxy = { ...(config.proxy as object), logLevel: 'debug' };
      },
    },
    show: async (cluster) => {
      await printPods(cluster, NAMESPACE);
      await printProxyLog(cluster, NAMESPACE);
    },
  };
}

async function clusterUp(): Promise<string> {
  const { stdout } = await run('bash', [path.join(repoRoot, 'e2e', 'cluster', 'up.sh')], {
    maxBuffer: 4 * 1024 * 1024,
  });
  const kubeconfig = stdout.trim().split('\n').pop() ?? '';
  process.env.KUBECONFIG = kubeconfig;
  process.env[E2E_ENV.kubeconfig] = kubeconfig;
  process.env[E2E_ENV.cluster] = 'local';
  return kubeconfig;
}

/** An earlier demo goes first (its processes, its release, its namespace): every run starts the same. */
async function clearEarlierDemo(cluster: Cluster): Promise<void> {
  stopDemoProcesses();
  await helm('uninstall', 'outrigger', '--namespace', SYSTEM_NAMESPACE, '--wait').catch(
    () => undefined,
  );
  await deleteNamespace(cluster, NAMESPACE, { wait: true });
}

/** Writes a changed configuration into the ConfigMap and returns its revision. */
async function changeConfig(cluster: Cluster, platform: Platform): Promise<string> {
  const cm = await cluster.core.readNamespacedConfigMap({
    namespace: SYSTEM_NAMESPACE,
    name: CONFIG_MAP_NAME,
  });
  const config = (parse(cm.data?.[CONFIG_MAP_KEY] ?? '') ?? {}) as Record<string, unknown>;
  platform.change.edit(config);
  const text = stringify(config);
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CONFIG_MAP_NAME, namespace: SYSTEM_NAMESPACE },
    data: { [CONFIG_MAP_KEY]: text },
  } as Parameters<typeof apply>[1]);
  return makeSnapshot(mustParseConfig(text)).revision;
}

async function demo(): Promise<void> {
  prepareLogDir();
  say(
    'Bringing the local cluster up: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes) and, where this machine can run one, a real node (containerd, kubelet, kube-proxy)...',
  );
  const kubeconfig = await clusterUp();
  const cluster = connect(loadKubeConfig(kubeconfig));
  say(`The cluster is up: export KUBECONFIG=${kubeconfig}`);
  await clearEarlierDemo(cluster);

  const target = await prepareInCluster(cluster);
  const platform =
    typeof target === 'string'
      ? processesPlatform
      : realNodePlatform((c) => installWithHelm(c, target));
  say(
    typeof target === 'string'
      ? `No real node here (${target}): Outrigger's two components run on this machine as processes, and the pods are kwok's, which run no containers.`
      : `Real node outrigger-node is Ready: what follows runs real containers (containerd and runc).`,
  );
  await platform.install(cluster);

  say(
    `Creating namespace ${NAMESPACE} with ${platform.workloads.describe}, before opting it in: their pods run without the sidecar.`,
  );
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: NAMESPACE, annotations: realNodeNamespaceAnnotations() },
  });
  await apply(cluster, platform.workloads.yaml, { namespace: NAMESPACE });
  await waitFor(
    'the pods to be created',
    async () => {
      const { items } = await cluster.core.listNamespacedPod({ namespace: NAMESPACE });
      const running = items.filter((p) => p.status?.phase === 'Running');
      return running.length >= platform.workloads.pods ? done(undefined) : pending(items.length);
    },
    { timeoutMs: 120_000 },
  );
  await platform.show(cluster);

  say(
    `Opting ${NAMESPACE} in: kubectl annotate namespace ${NAMESPACE} ${INJECT}=${ENABLED}. The controller labels it and restarts its owners in waves.`,
  );
  await cluster.core.patchNamespace(
    { name: NAMESPACE, body: { metadata: { annotations: { [INJECT]: ENABLED } } } },
    MERGE_PATCH,
  );
  const current = await currentRevision(cluster);
  await followWave(NAMESPACE, current);
  await podsAt(cluster, NAMESPACE, current);
  say(`Every pod now runs the proxy sidecar, revision ${current}:`);
  await platform.show(cluster);
  process.stdout.write(await outriggerStatus(NAMESPACE));

  say(
    `Changing ${platform.change.describe} in ConfigMap ${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}: a new revision, rolled out in a wave. One canary owner goes first and must pass the health gate (rollout complete, pods Ready, the proxy not crash-looping) and a soak before the rest follow; until their wave restarts them, the others' new pods keep the old proxy.`,
  );
  const next = await changeConfig(cluster, platform);
  await followWave(NAMESPACE, next);
  await podsAt(cluster, NAMESPACE, next);
  say(`The wave is done: every owner runs revision ${next}.`);
  await platform.show(cluster);
  process.stdout.write(await outriggerStatus(NAMESPACE));

  say(
    `Done in ${secondsSinceStart()} s. The cluster and Outrigger stay up (export KUBECONFIG=${kubeconfig}; npx outrigger status -o wide). Tear everything down with: make demo-down`,
  );
  await cluster.close();
}

demo().catch((error: unknown) => {
  process.stderr.write(
    `make demo failed: ${error instanceof Error ? error.stack : String(error)}\nLogs: ${demoDir}\n`,
  );
  process.exitCode = 1;
});
