// make demo: Outrigger end to end on the local control plane, narrated. It brings the cluster up,
// installs Outrigger from the Helm chart (rendered with the webhook called by URL and its
// certificate given, certificates.mode=external, since kwok
// runs no images: the two components run here as processes, each as its own ServiceAccount),
// opts a namespace holding a Deployment, a StatefulSet and a DaemonSet in, shows their pods
// injected, bumps the proxy version, and shows the wave rolling them onto the new revision.
// The cluster and the two processes stay up; `make demo-down` stops them.

import { execFile, spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONTROLLER_SERVICE_ACCOUNT,
  ENABLED,
  INJECT,
  REVISION,
  SYSTEM_NAMESPACE,
  WEBHOOK_SERVICE_ACCOUNT,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  apply,
  connect,
  deleteNamespace,
  E2E_ENV,
  loadKubeConfig,
  done,
  freePort,
  makeServingCert,
  outriggerCacheDir,
  parseManifests,
  pending,
  prepareLogDir,
  readPinnedVersions,
  repoRoot,
  threeKindsYaml,
  waitFor,
  writeServiceAccountKubeConfig,
  type Cluster,
} from '../src';

const run = promisify(execFile);
const NAMESPACE = 'demo';
const OLD_PROXY = 'ghcr.io/outrigger/proxy:1.0.0';
const NEW_PROXY = 'ghcr.io/outrigger/proxy:1.1.0';
const demoDir = path.join(outriggerCacheDir(), 'demo');
const started = Date.now();

const say = (text: string): void => {
  const at = ((Date.now() - started) / 1000).toFixed(0).padStart(3);
  process.stdout.write(`\n[${at}s] ${text}\n`);
};

async function clusterUp(): Promise<string> {
  const { stdout } = await run('bash', [path.join(repoRoot, 'e2e', 'cluster', 'up.sh')], {
    maxBuffer: 4 * 1024 * 1024,
  });
  const kubeconfig = stdout.trim().split('\n').pop() ?? '';
  process.env.KUBECONFIG = kubeconfig;
  process.env[E2E_ENV.kubeconfig] = kubeconfig;
  return kubeconfig;
}

/** The chart rendered for processes outside the cluster: the webhook by URL, with our CA. */
async function render(url: string, caBundle: string): Promise<string> {
  const helm = path.join(outriggerCacheDir(), 'bin', `helm-${readPinnedVersions().helm}`);
  // prettier-ignore
  const { stdout } = await run(helm, [
    'template', 'outrigger', path.join(repoRoot, 'manifests', 'chart'),
    '--namespace', SYSTEM_NAMESPACE,
    '--set', 'namespace.create=true',
    '--set', `webhook.url=${url}`,
    '--set', 'certificates.mode=external',
    '--set', `certificates.caBundle=${caBundle}`,
    '--set', 'rollout.maxConcurrent=2',
  ], { maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** Starts a binary detached, so it outlives the demo; its pid goes where demo-down finds it. */
function startDetached(name: string, args: string[], kubeconfig: string): number {
  mkdirSync(demoDir, { recursive: true });
  const log = path.join(demoDir, `${name}.log`);
  const out = openSync(log, 'w');
  const child = spawn(process.execPath, args, {
    cwd: repoRoot,
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, KUBECONFIG: kubeconfig },
  });
  child.unref();
  writeFileSync(path.join(demoDir, `${name}.pid`), `${child.pid ?? ''}\n`);
  return child.pid ?? 0;
}

async function waitReady(url: string, what: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      try {
        const response = await fetch(url);
        return response.ok ? done(undefined) : pending(response.status);
      } catch (error) {
        return pending(String(error));
      }
    },
    { timeoutMs: 60_000 },
  );
}

async function install(cluster: Cluster): Promise<void> {
  const [port, webhookMetrics, controllerMetrics] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
  ]);
  const cert = await makeServingCert({ hosts: ['127.0.0.1'], dir: mkdemo('tls'), days: 30 });
  const objects = parseManifests(await render(`https://127.0.0.1:${port}`, cert.caBundle));
  // kwok runs no images: the Deployments would be pods that do nothing. The binaries run here.
  const kept = objects.filter((o) => o.kind !== 'Deployment' && o.kind !== 'PodDisruptionBudget');
  await apply(cluster, kept);
  say(
    `Installed ${kept.length} objects from the chart (${objects.length - kept.length} Deployments left out: kwok runs no images).`,
  );
  const account = async (name: string) =>
    (
      await writeServiceAccountKubeConfig(
        cluster,
        { namespace: SYSTEM_NAMESPACE, name },
        { expirationSeconds: 86_400 },
      )
    ).path;
  const [webhookKc, controllerKc] = await Promise.all([
    account(WEBHOOK_SERVICE_ACCOUNT),
    account(CONTROLLER_SERVICE_ACCOUNT),
  ]);
  // prettier-ignore
  const webhookPid = startDetached('outrigger-webhook', [
    path.join(repoRoot, 'webhook', 'bin', 'outrigger-webhook.js'),
    '--listen', `127.0.0.1:${port}`, '--metrics-listen', `127.0.0.1:${webhookMetrics}`,
    '--tls-cert-file', cert.certFile, '--tls-key-file', cert.keyFile,
    '--config-map', `${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}`, '--kubeconfig', webhookKc,
    '--shutdown-delay-seconds', '0',
  ], webhookKc);
  // prettier-ignore
  const controllerPid = startDetached('outrigger-controller', [
    path.join(repoRoot, 'controller', 'bin', 'outrigger-controller.js'),
    '--metrics-listen', `127.0.0.1:${controllerMetrics}`, '--kubeconfig', controllerKc,
    '--webhook-ready-url', `http://127.0.0.1:${webhookMetrics}/readyz`,
  ], controllerKc);
  await waitReady(`http://127.0.0.1:${webhookMetrics}/readyz`, 'the webhook to be ready');
  await waitReady(`http://127.0.0.1:${controllerMetrics}/readyz`, 'the controller to be ready');
  say(
    `outrigger-webhook (pid ${webhookPid}) and outrigger-controller (pid ${controllerPid}) run as their own ServiceAccounts; logs in ${demoDir}.`,
  );
}

function mkdemo(sub: string): string {
  const dir = path.join(demoDir, sub);
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function outriggerStatus(): Promise<string> {
  const cli = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
  const { stdout } = await run(process.execPath, [cli, 'status', '-n', NAMESPACE]);
  return stdout;
}

interface StatusJson {
  rows: {
    kind: string;
    name: string;
    state: string;
    revision?: string;
    injected: number;
    pods: number;
  }[];
}

/** Prints each change of the owners' states until every one is current at `revision`. */
async function followWave(revision: string): Promise<void> {
  const cli = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
  let last = '';
  await waitFor(
    'the wave to finish',
    async () => {
      const { stdout } = await run(process.execPath, [
        cli,
        'status',
        '-n',
        NAMESPACE,
        '-o',
        'json',
      ]);
      const { rows } = JSON.parse(stdout) as StatusJson;
      const line = rows
        .map((r) => `${r.kind}/${r.name} ${r.state} ${r.injected}/${r.pods}`)
        .join(', ');
      if (line !== last) process.stdout.write(`  wave: ${line}\n`);
      last = line;
      const finished = rows.every((r) => r.state === 'current' && r.revision === revision);
      return finished ? done(undefined) : pending(line);
    },
    { timeoutMs: 180_000, intervalMs: 200 },
  );
}

/** An earlier demo's processes and namespace go first, so every run starts the same. */
async function clearEarlierDemo(cluster: Cluster): Promise<void> {
  for (const name of ['outrigger-webhook', 'outrigger-controller']) {
    try {
      const pid = Number(readFileSync(path.join(demoDir, `${name}.pid`), 'utf8'));
      // Never 0 or negative: those signal a whole process group, this one included.
      if (Number.isInteger(pid) && pid > 0) process.kill(pid);
    } catch {
      // not running
    }
  }
  await deleteNamespace(cluster, NAMESPACE, { wait: true });
}

async function podsAt(cluster: Cluster, revision: string): Promise<void> {
  await waitFor(
    `every pod in ${NAMESPACE} injected at revision ${revision}`,
    async () => {
      const { items } = await cluster.core.listNamespacedPod({ namespace: NAMESPACE });
      const live = items.filter((p) => !p.metadata?.deletionTimestamp);
      const behind = live.filter((p) => p.metadata?.labels?.[REVISION] !== revision);
      return live.length > 0 && behind.length === 0 ? done(undefined) : pending(behind.length);
    },
    { timeoutMs: 180_000 },
  );
}

async function bumpProxy(cluster: Cluster): Promise<string> {
  const cm = await cluster.core.readNamespacedConfigMap({
    namespace: SYSTEM_NAMESPACE,
    name: CONFIG_MAP_NAME,
  });
  const text = (cm.data?.[CONFIG_MAP_KEY] ?? '').replace(OLD_PROXY, NEW_PROXY);
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
    'Bringing the local control plane up (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok)...',
  );
  const kubeconfig = await clusterUp();
  const cluster = connect(loadKubeConfig(kubeconfig));
  say(`The cluster is up: export KUBECONFIG=${kubeconfig}`);
  await clearEarlierDemo(cluster);
  await install(cluster);

  say(
    `Creating namespace ${NAMESPACE} with a Deployment, a StatefulSet and a DaemonSet, before opting it in: their pods run without the sidecar.`,
  );
  await apply(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  await apply(cluster, threeKindsYaml(2, 2), { namespace: NAMESPACE });
  await waitFor('the pods to be created', async () => {
    const { items } = await cluster.core.listNamespacedPod({ namespace: NAMESPACE });
    return items.length >= 5 ? done(undefined) : pending(items.length);
  });
  const { items } = await cluster.core.listNamespacedPod({ namespace: NAMESPACE });
  process.stdout.write(
    `${items.length} pods, ${items.filter((p) => p.metadata?.labels?.[REVISION]).length} with the sidecar\n`,
  );

  say(
    `Opting ${NAMESPACE} in: kubectl annotate namespace ${NAMESPACE} ${INJECT}=${ENABLED}. The controller labels it and restarts its owners in waves of at most 2.`,
  );
  await cluster.core.patchNamespace(
    { name: NAMESPACE, body: { metadata: { annotations: { [INJECT]: ENABLED } } } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  const current = await currentRevision(cluster);
  await followWave(current);
  await podsAt(cluster, current);
  say('Every pod now runs the proxy sidecar:');
  process.stdout.write(await outriggerStatus());

  say(
    `Bumping the proxy from ${OLD_PROXY} to ${NEW_PROXY} in ConfigMap ${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}: a new revision, rolled out in a wave.`,
  );
  const next = await bumpProxy(cluster);
  await followWave(next);
  await podsAt(cluster, next);
  say(`The wave is done: every owner runs revision ${next}.`);
  process.stdout.write(await outriggerStatus());

  say(
    `Done in ${((Date.now() - started) / 1000).toFixed(0)} s. The cluster and Outrigger stay up (export KUBECONFIG=${kubeconfig}; npx outrigger status -o wide). Tear everything down with: make demo-down`,
  );
  await cluster.close();
}

async function currentRevision(cluster: Cluster): Promise<string> {
  const cm = await cluster.core.readNamespacedConfigMap({
    namespace: SYSTEM_NAMESPACE,
    name: CONFIG_MAP_NAME,
  });
  return makeSnapshot(mustParseConfig(cm.data?.[CONFIG_MAP_KEY] ?? '')).revision;
}

demo().catch((error: unknown) => {
  process.stderr.write(
    `make demo failed: ${error instanceof Error ? error.stack : String(error)}\nLogs: ${demoDir}\n`,
  );
  process.exitCode = 1;
});
