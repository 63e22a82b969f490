// The webhook behind a real API server: the outrigger-webhook binary runs
// as its own ServiceAccount with least-privilege RBAC, reads its configuration from a ConfigMap,
// and a MutatingWebhookConfiguration shaped like the product's install points the API server at
// it. A new Deployment in an opted-in namespace yields exactly one ReplicaSet with a stamped
// template and injected pods; pods elsewhere are left alone unless they opt in themselves.

import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import type { KubernetesObject, V1ConfigMap, V1Deployment, V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  DISABLED,
  ENABLED,
  INJECT,
  INJECTION_LABEL,
  REVISION,
  SKIPPED,
  WEBHOOK_SERVICE_ACCOUNT,
  defaultConfig,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  apply,
  buildWorkspace,
  connect,
  createNamespace,
  createServiceAccount,
  deleteNamespace,
  done,
  dumpingOnFailure as dumpOnFailure,
  freePort,
  grantRole,
  makeServingCert,
  parseManifests,
  pending,
  remove,
  repoRoot,
  startProcess,
  stopAllProcesses,
  waitFor,
  waitForRollout,
  webhookConfiguration,
  webhookHost,
  RUN_LABEL,
  writeServiceAccountKubeConfig,
  type Cluster,
  type ManagedProcess,
  PAUSE_IMAGE,
} from '../src';
import { webhookExpectations } from './webhook-expectations';

/** Never pulled on the local cluster (kwok runs no containers); small and real elsewhere. */
const IMAGE = PAUSE_IMAGE;
const WEBHOOK_BIN = path.join(repoRoot, 'webhook', 'bin', 'outrigger-webhook.js');
/** The Deployment controller's count of its rollouts (ReplicaSets it made). */
const DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';
/** Not the default log level, so the revision and the proxy's environment show the ConfigMap was read. */
const CONFIG_YAML = 'proxy:\n  logLevel: debug\n';
const REVISION_EXPECTED = makeSnapshot(mustParseConfig(CONFIG_YAML)).revision;

/**
 * Every namespace of this run carries this label and every webhook entry requires it: other runs
 * sharing the cluster may opt namespaces in too, and neither run's webhook may touch the other's.
 * It is the one term the product's install does not have.
 */
const run = randomBytes(4).toString('hex');

const cluster: Cluster = connect();
const namespaces: string[] = [];
/** Cluster-scoped objects this file created (ClusterRole, ClusterRoleBinding, the configuration). */
const clusterObjects: KubernetesObject[] = [];
let webhook: ManagedProcess | undefined;
/** The namespace standing in for outrigger-system. */
let system: string;
/** Opted in: annotated by the admin and labelled as the controller would mirror it. */
let optedIn: string;
/** Not opted in. */
let plain: string;

async function newNamespace(
  prefix: string,
  extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {},
): Promise<string> {
  const name = await createNamespace(cluster, {
    prefix,
    labels: { ...extra.labels, [RUN_LABEL]: run },
    annotations: extra.annotations,
  });
  namespaces.push(name);
  return name;
}

/** A ServiceAccount with only what the webhook reads: namespaces, and its own ConfigMap. */
async function webhookAccount(): Promise<string> {
  const account = { namespace: system, name: WEBHOOK_SERVICE_ACCOUNT };
  await createServiceAccount(cluster, account);
  clusterObjects.push(
    ...(await grantRole(cluster, account, {
      name: 'outrigger-webhook-namespaces',
      clusterWide: true,
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list', 'watch'] }],
    })),
  );
  // Lists and watches with fieldSelector metadata.name=<name> are authorized per name.
  await grantRole(cluster, account, {
    name: 'outrigger-webhook-config',
    rules: [
      {
        apiGroups: [''],
        resources: ['configmaps'],
        resourceNames: [CONFIG_MAP_NAME],
        verbs: ['get', 'list', 'watch'],
      },
    ],
  });
  return (await writeServiceAccountKubeConfig(cluster, account)).path;
}

async function startWebhook(): Promise<void> {
  const host = webhookHost();
  const cert = await makeServingCert({ hosts: [host] });
  const [port, metricsPort] = await Promise.all([freePort(host), freePort()]);
  const kubeconfig = await webhookAccount();
  // prettier-ignore
  const args = [
    WEBHOOK_BIN,
    '--listen', `${host}:${port}`,
    '--metrics-listen', `127.0.0.1:${metricsPort}`,
    '--tls-cert-file', cert.certFile,
    '--tls-key-file', cert.keyFile,
    '--config-map', `${system}/${CONFIG_MAP_NAME}`,
    '--system-namespace', system,
    '--kubeconfig', kubeconfig,
    '--shutdown-delay-seconds', '0',
    '--log-level', 'debug',
  ];
  webhook = await startProcess({
    name: 'outrigger-webhook',
    command: process.execPath,
    args,
    ready: { url: `http://127.0.0.1:${metricsPort}/readyz` },
  });
  await installConfiguration(`https://${host}:${port}`, cert.caBundle);
}

function barePod(name: string, labels: Record<string, string> = {}): V1Pod {
  return {
    metadata: { name, labels: { app: name, ...labels } },
    spec: { containers: [{ name: 'app', image: IMAGE }] },
  };
}

async function installConfiguration(url: string, caBundle: string): Promise<void> {
  const configuration = webhookConfiguration({
    name: `outrigger-e2e-${run}`,
    url,
    caBundle,
    system,
    run,
  });
  clusterObjects.push(configuration);
  await apply(cluster, configuration);
  // The API server picks a new configuration up within a second or so; a dry run (webhooks
  // declaring sideEffects: None are called for it) shows when it has.
  await waitFor('the API server to call the outrigger webhook', async () => {
    const probe = await cluster.core.createNamespacedPod({
      namespace: optedIn,
      body: barePod('probe'),
      dryRun: 'All',
    });
    return probe.metadata?.labels?.[REVISION] === REVISION_EXPECTED
      ? done(undefined)
      : pending({ labels: probe.metadata?.labels, webhookLog: webhook?.tail(5) });
  });
}

beforeAll(async () => {
  await buildWorkspace('webhook');
  system = await newNamespace('outrigger-system');
  optedIn = await newNamespace('webhook-opted-in', {
    labels: { [INJECTION_LABEL]: ENABLED },
    annotations: { [INJECT]: ENABLED },
  });
  plain = await newNamespace('webhook-plain');
  const configMap: V1ConfigMap = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: CONFIG_MAP_NAME, namespace: system },
    data: { [CONFIG_MAP_KEY]: CONFIG_YAML },
  };
  await apply(cluster, configMap);
  await startWebhook();
}, 90_000);

afterAll(async () => {
  // The configuration first, so nothing calls a webhook that is going away.
  await remove(cluster, clusterObjects).catch((e: unknown) => console.warn(e));
  await stopAllProcesses();
  await Promise.all(namespaces.map((ns) => deleteNamespace(cluster, ns)));
  await cluster.close();
});

/** Runs a test body; when it fails, the test's namespaces are dumped to the run's log folder. */
const dumpingOnFailure = (body: () => Promise<void>): Promise<void> =>
  dumpOnFailure(cluster, namespaces, body);

/** The webhook's JSON log entries, from byte `from` of its log on. */
function webhookLog(from?: number): Record<string, unknown>[] {
  return (webhook?.output(from) ?? '')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The webhook's answer (a debug log entry) to a workload write in `namespace`, after `from`. */
function workloadAdmission(namespace: string, from?: number): Promise<Record<string, unknown>> {
  return waitFor(`the webhook to answer a workload write in ${namespace}`, () => {
    const entry = webhookLog(from).find(
      (e) =>
        e.message === 'admission' &&
        e.endpoint === 'workloads' &&
        e.namespace === namespace &&
        e.dryRun === false,
    );
    return entry ? done(entry) : pending(webhook?.tail(5));
  });
}

const {
  names,
  expectStamped,
  expectInjected,
  expectUntouched,
  deployment,
  replicaSetsOf,
  readyPods,
  expectOneReplicaSet,
  expectScaled,
  statefulSetAndDaemonSet,
  controllerRevisionsOf,
} = webhookExpectations(cluster, { revision: REVISION_EXPECTED, image: IMAGE });

describe('outrigger-webhook behind the API server', () => {
  it('stamps a new Deployment in flight: one ReplicaSet, and every pod injected and Ready', async () => {
    await dumpingOnFailure(async () => {
      const [created] = await apply(cluster, deployment('web', 2), { namespace: optedIn });
      // The stamp is in the object the create stored: there was never an unstamped version.
      expectStamped((created as V1Deployment).spec?.template, 'web');

      const rolled = await waitForRollout(cluster, {
        kind: 'Deployment',
        namespace: optedIn,
        name: 'web',
      });
      expectStamped(rolled.spec?.template, 'web');
      // Still the first generation and revision: nothing changed the template after the create.
      expect(rolled.metadata?.generation).toBe(1);
      expect(rolled.metadata?.annotations?.[DEPLOYMENT_REVISION]).toBe('1');

      const replicaSet = await expectOneReplicaSet(optedIn, rolled);
      expectStamped(replicaSet.spec?.template, 'web');

      const pods = await readyPods(optedIn, 'web', 2);
      for (const pod of pods) {
        expectInjected(pod, { kind: 'Deployment', name: 'web' });
        expect(pod.metadata?.ownerReferences?.[0]?.name).toBe(replicaSet.metadata?.name);
      }
    });
  });

  it('scaling the Deployment (replicas only) keeps its one ReplicaSet', async () => {
    await dumpingOnFailure(async () => {
      const original = await cluster.apps.readNamespacedDeployment({
        namespace: optedIn,
        name: 'web',
      });
      const [replicaSet] = await replicaSetsOf(optedIn, original);

      // `kubectl apply --server-side` of the manifest with only replicas changed: the stamp
      // stays (the webhook added it, the applier does not own it), and the webhook says so.
      let logFrom = webhook?.outputSize();
      await apply(cluster, deployment('web', 3), { namespace: optedIn });
      expect(await workloadAdmission(optedIn, logFrom)).toMatchObject({
        outcome: 'unchanged',
        reason: 'stamp-current',
      });
      await expectScaled(original, replicaSet, 3);

      // `kubectl replace` of the manifest with only replicas changed: the new object has no
      // stamp, which alone would change the template and roll the Deployment. The webhook puts
      // the stamp it had back.
      logFrom = webhook?.outputSize();
      const [manifest] = parseManifests(deployment('web', 4));
      await cluster.apps.replaceNamespacedDeployment({
        namespace: optedIn,
        name: 'web',
        body: manifest as V1Deployment,
      });
      expect(await workloadAdmission(optedIn, logFrom)).toMatchObject({
        outcome: 'stamped',
        reason: 'stamped',
      });
      await expectScaled(original, replicaSet, 4);
    });
  });

  it('stamps a new StatefulSet and DaemonSet in flight too: one revision each, pods injected', async () => {
    await dumpingOnFailure(async () => {
      await apply(cluster, statefulSetAndDaemonSet('store'), { namespace: optedIn });
      const [statefulSet, daemonSet] = await Promise.all([
        waitForRollout(cluster, { kind: 'StatefulSet', namespace: optedIn, name: 'store' }),
        waitForRollout(cluster, { kind: 'DaemonSet', namespace: optedIn, name: 'store' }),
      ]);
      // A template changed after the create would be a second generation, and a second
      // ControllerRevision once observed: generation 1, observed, is the only template.
      for (const workload of [statefulSet, daemonSet]) {
        const kind = workload.kind ?? '';
        expectStamped(workload.spec?.template, 'store', kind);
        expect(workload.metadata?.generation).toBe(1);
        expect(workload.status?.observedGeneration).toBe(1);
        expect({
          kind,
          revisions: await controllerRevisionsOf(optedIn, workload.metadata?.uid),
        }).toEqual({ kind, revisions: [expect.any(String)] });
      }
      const nodes = daemonSet.status?.desiredNumberScheduled ?? 0;
      expect(nodes).toBeGreaterThan(0);
      const pods = await readyPods(optedIn, 'store', 2 + nodes);
      for (const pod of pods) {
        const owner = pod.metadata?.ownerReferences?.[0]?.kind ?? '';
        expectInjected(pod, { kind: owner, name: 'store' });
      }
      expect(new Set(pods.map((p) => p.metadata?.ownerReferences?.[0]?.kind))).toEqual(
        new Set(['StatefulSet', 'DaemonSet']),
      );
    });
  });

  it('stores a pod of a namespace that is not opted in untouched', async () => {
    await dumpingOnFailure(async () => {
      await cluster.core.createNamespacedPod({ namespace: plain, body: barePod('plain') });
      const stored = await cluster.core.readNamespacedPod({ namespace: plain, name: 'plain' });
      expectUntouched(stored, ['app']);
      expect(stored.metadata?.labels).toEqual({ app: 'plain' });
    });
  });

  it('injects a pod labelled outrigger.dev/inject=enabled in a namespace that is not opted in', async () => {
    await dumpingOnFailure(async () => {
      const body = barePod('opted-in-pod', { [INJECT]: ENABLED });
      await cluster.core.createNamespacedPod({ namespace: plain, body });
      const stored = await cluster.core.readNamespacedPod({
        namespace: plain,
        name: 'opted-in-pod',
      });
      // A bare pod owns itself.
      expectInjected(stored, { kind: 'Pod', name: 'opted-in-pod' });
      expect(names(stored.spec?.containers)).toEqual(['app']);
    });
  });

  it('marks the pods of a template that opts out, in an opted-in namespace, and injects nothing', async () => {
    await dumpingOnFailure(async () => {
      await apply(cluster, deployment('opted-out', 1, { [INJECT]: DISABLED }), {
        namespace: optedIn,
      });
      const rolled = await waitForRollout(cluster, {
        kind: 'Deployment',
        namespace: optedIn,
        name: 'opted-out',
      });
      // Stamped all the same: the stamp names the owner, whether or not its pods are injected.
      expectStamped(rolled.spec?.template, 'opted-out');
      const [pod, ...more] = await readyPods(optedIn, 'opted-out', 1);
      expect(more).toEqual([]);
      expect(pod?.metadata?.labels?.[SKIPPED]).toBe('opted-out');
      expect(pod?.metadata?.labels?.[REVISION]).toBeUndefined();
      expect(names(pod?.spec?.initContainers)).toEqual([]);
      expect(names(pod?.spec?.containers)).toEqual(['opted-out']);
    });
  });

  it("never sends a pod of Outrigger's own namespace to the webhook, even one that opts in", async () => {
    await dumpingOnFailure(async () => {
      const body = barePod('system-pod', { [INJECT]: ENABLED });
      await cluster.core.createNamespacedPod({ namespace: system, body });
      const stored = await cluster.core.readNamespacedPod({
        namespace: system,
        name: 'system-pod',
      });
      // Not even a skip mark: the selectors kept it from the webhook.
      expect(stored.metadata?.labels).toEqual({ app: 'system-pod', [INJECT]: ENABLED });
      expect(names(stored.spec?.initContainers)).toEqual([]);
      expect(names(stored.spec?.containers)).toEqual(['app']);
    });
  });

  it('runs on the configuration of its ConfigMap, not the default', () => {
    expect(REVISION_EXPECTED).not.toBe(makeSnapshot(defaultConfig()).revision);
    const loaded = webhookLog().filter((entry) => entry.message === 'configuration in force');
    expect(loaded).toEqual([
      expect.objectContaining({
        source: `configmap ${system}/${CONFIG_MAP_NAME}`,
        revision: REVISION_EXPECTED,
      }),
    ]);
  });

  it('exits cleanly on SIGTERM, at once', async () => {
    // stop() sends SIGKILL after 5 s: the API server's spare connections must not hold it up.
    expect(await webhook?.stop()).toEqual({ code: 0, signal: null });
    expect(webhookLog().map((entry) => entry.message)).toContain('stopped');
  });
});
