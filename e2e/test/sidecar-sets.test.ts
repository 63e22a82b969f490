// Several sidecar sets on a node that runs containers: the proxy and a log shipper (a second
// small image, e2e/log-shipper) injected into the same pods in one pass, both really running
// beside the app; a workload opted out of the shipper alone keeps the proxy; a configuration
// whose new set conflicts with the shipper is refused (the controller's Event, `outrigger
// check`) while new pods keep getting both sets from the last good configuration. The tests
// share one release and build on each other, in order.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  REVISION,
  SYSTEM_NAMESPACE,
  appliedSets,
  mustParseConfig,
  setInjectKey,
  setRevisionLabel,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  connect,
  deploymentYaml,
  done,
  inClusterTarget,
  kubeconfigPath,
  pending,
  podReady,
  podsRunningWithProxy,
  repoRoot,
  useInstall,
  waitFor,
  waitForRollout,
  type InClusterTarget,
} from '../src';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
const MINUTES = 60_000;
const SHIPPER = 'shipper';

const target = inClusterTarget();
const skip =
  typeof target === 'string'
    ? target
    : target.shipperImage === undefined
      ? 'no log shipper image here (make images builds it; OUTRIGGER_E2E_SHIPPER_IMAGE on another cluster)'
      : undefined;
const describeInCluster = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`[e2e] sidecar-sets suite skipped: ${skip}\n`);

/** The log shipper set: a native sidecar that reads the app's logs, told its revision by the pod's label. */
function shipperSet(image: string): Record<string, unknown> {
  return {
    name: 'log-shipper',
    containers: [
      {
        name: SHIPPER,
        image,
        imagePullPolicy: 'Never',
        env: [
          {
            name: 'SHIPPER_REVISION',
            valueFrom: {
              fieldRef: { fieldPath: `metadata.labels['${setRevisionLabel('log-shipper')}']` },
            },
          },
        ],
        ports: [{ containerPort: 2020, name: 'shipper' }],
        readinessProbe: { httpGet: { path: '/ready', port: 2020 }, periodSeconds: 2 },
        resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '96Mi' } },
        securityContext: {
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        },
        volumeMounts: [{ name: 'app-logs', mountPath: '/var/log/app', readOnly: true }],
      },
    ],
    volumes: [{ name: 'app-logs', emptyDir: {} }],
  };
}

const containerNames = (pod: V1Pod): string[] => [
  ...(pod.spec?.initContainers ?? []).map((c) => c.name),
  ...(pod.spec?.containers.map((c) => c.name) ?? []),
];

describeInCluster('sidecar sets, on a node that runs containers', () => {
  const cluster = connect();
  const { image, proxyValues, shipperImage } = target as InClusterTarget;
  let app = '';
  useInstall(cluster, { prefix: 'sets', image, values: proxyValues, created: (n) => (app = n) });

  const configMap = () =>
    cluster.core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: SYSTEM_NAMESPACE });

  /** Writes config.yaml with `sets` as given, the way an admin edits it; returns the text. */
  async function writeSets(sets: unknown[]): Promise<string> {
    const doc = parseDocument((await configMap()).data?.[CONFIG_MAP_KEY] ?? '');
    doc.setIn(['sets'], sets);
    const text = doc.toString();
    await cluster.core.patchNamespacedConfigMap(
      {
        name: CONFIG_MAP_NAME,
        namespace: SYSTEM_NAMESPACE,
        body: { data: { [CONFIG_MAP_KEY]: text } },
      },
      MERGE_PATCH,
    );
    return text;
  }

  /** Pods of `app=<name>`, `count` of them, Running and Ready with the proxy and every container running. */
  async function runningWithSets(name: string, count: number): Promise<V1Pod[]> {
    const pods = await podsRunningWithProxy(cluster, app, `app=${name}`, count);
    return waitFor(
      `the ${count} pods of ${name} with every container running`,
      async () => {
        const live = (
          await cluster.core.listNamespacedPod({ namespace: app, labelSelector: `app=${name}` })
        ).items.filter((p) => !p.metadata?.deletionTimestamp);
        const statuses = (p: V1Pod) => [
          ...(p.status?.initContainerStatuses ?? []),
          ...(p.status?.containerStatuses ?? []),
        ];
        const running = live.filter(
          (p) =>
            podReady(p) &&
            statuses(p)
              .filter((s) => s.name !== 'outrigger-init')
              .every((s) => s.state?.running),
        );
        return running.length === count && live.length === count && pods.length === count
          ? done(live)
          : pending(
              live.map((p) => [
                p.metadata?.name,
                statuses(p).map((s) => [s.name, Object.keys(s.state ?? {})]),
              ]),
            );
      },
      { timeoutMs: 3 * MINUTES, intervalMs: 1000 },
    );
  }

  let shipperRevision = '';

  it(
    'injects the proxy and the log shipper into the same pods in one pass, both running beside the app',
    async () => {
      const text = await writeSets([shipperSet(shipperImage ?? '')]);
      shipperRevision = appliedSets(mustParseConfig(text))[0]?.revision ?? '';
      // The webhook applies the new configuration when it sees the ConfigMap: a Deployment made
      // before would get the previous one. A server-side dry run shows what the webhook does now.
      await waitFor('the webhook to inject the log shipper', async () => {
        const pod = await cluster.core.createNamespacedPod({
          namespace: app,
          dryRun: 'All',
          body: {
            metadata: { generateName: 'probe-', labels: { app: 'probe' } },
            spec: { containers: [{ name: 'probe', image: 'registry.k8s.io/pause:3.10' }] },
          },
        });
        return containerNames(pod).includes(SHIPPER)
          ? done(undefined)
          : pending(containerNames(pod));
      });
      await apply(cluster, deploymentYaml('web', { replicas: 2 }), { namespace: app });
      await waitForRollout(
        cluster,
        { kind: 'Deployment', namespace: app, name: 'web' },
        { timeoutMs: 4 * MINUTES },
      );
      const pods = await runningWithSets('web', 2);
      for (const pod of pods) {
        // One pass: the init container, the proxy, then the shipper, all before the app.
        expect(containerNames(pod)).toEqual(['outrigger-init', 'outrigger-proxy', SHIPPER, 'web']);
        expect(pod.metadata?.labels?.[setRevisionLabel('log-shipper')]).toBe(shipperRevision);
        expect(pod.metadata?.labels?.[REVISION]).toBeDefined();
        const log = await cluster.core.readNamespacedPodLog({
          namespace: app,
          name: pod.metadata?.name ?? '',
          container: SHIPPER,
        });
        expect(log).toContain(`"revision":"${shipperRevision}"`);
      }
      // outrigger status shows the set's revision on the owner's pods.
      const { stdout } = await run(process.execPath, [CLI, 'status', '-n', app], {
        env: { ...process.env, KUBECONFIG: kubeconfigPath() },
      });
      const row = stdout.split('\n').find((l) => l.split(/\s+/)[2] === 'web');
      expect(row).toContain(`log-shipper=${shipperRevision}:2`);
      expect(stdout).toContain(`sidecar sets: log-shipper ${shipperRevision}`);
    },
    8 * MINUTES,
  );

  it(
    'a workload opted out of the log shipper alone keeps the proxy',
    async () => {
      await apply(
        cluster,
        deploymentYaml('solo', {
          templateAnnotations: { [setInjectKey('log-shipper')]: 'disabled' },
        }),
        { namespace: app },
      );
      const [pod] = await podsRunningWithProxy(cluster, app, 'app=solo', 1);
      expect(pod && containerNames(pod)).toEqual(['outrigger-init', 'outrigger-proxy', 'solo']);
      expect(pod?.metadata?.labels?.[setRevisionLabel('log-shipper')]).toBeUndefined();
    },
    5 * MINUTES,
  );

  it(
    'a set that conflicts with the shipper is refused, and new pods keep both sets from the last good configuration',
    async () => {
      const conflicting = { name: 'tracer', containers: [{ name: SHIPPER, image: shipperImage }] };
      await writeSets([shipperSet(shipperImage ?? ''), conflicting]);
      const event = await waitFor(
        'the controller to refuse the configuration',
        async () => {
          const { items } = await cluster.core.listNamespacedEvent({
            namespace: SYSTEM_NAMESPACE,
            fieldSelector: `involvedObject.kind=ConfigMap,involvedObject.name=${CONFIG_MAP_NAME},reason=InvalidConfiguration`,
          });
          const e = items.find((i) => i.message?.includes('tracer'));
          return e ? done(e) : pending(items.map((i) => i.message));
        },
        { timeoutMs: 2 * MINUTES },
      );
      expect(event.message).toContain('sets log-shipper and tracer can select the same pod');
      const checked = await run(process.execPath, [CLI, 'check'], {
        env: { ...process.env, KUBECONFIG: kubeconfigPath() },
      }).then(
        (r) => ({ code: 0, out: r.stdout }),
        (err: { code?: number; stdout?: string }) => ({
          code: err.code ?? -1,
          out: err.stdout ?? '',
        }),
      );
      expect(checked.code).not.toBe(0);
      expect(checked.out).toMatch(/× configuration valid: [\s\S]*sets log-shipper and tracer/);

      await cluster.apps.patchNamespacedDeploymentScale(
        { namespace: app, name: 'web', body: { spec: { replicas: 3 } } },
        MERGE_PATCH,
      );
      const pods = await runningWithSets('web', 3);
      for (const pod of pods) {
        expect(containerNames(pod)).toEqual(['outrigger-init', 'outrigger-proxy', SHIPPER, 'web']);
        expect(pod.metadata?.labels?.[setRevisionLabel('log-shipper')]).toBe(shipperRevision);
      }
    },
    6 * MINUTES,
  );
});
