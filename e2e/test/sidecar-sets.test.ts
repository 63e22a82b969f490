// Several sidecar sets on a node that runs containers: the proxy and a log shipper (a second
// small image, e2e/log-shipper) injected into the same pods in one pass, both really running
// beside the app; a workload opted out of the shipper alone keeps the proxy; a configuration
// whose new set conflicts with the shipper is refused (the controller's Event, `outrigger
// check`) while new pods keep getting both sets from the last good configuration. The tests
// share one release and build on each other, in order.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
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
  SHIPPER_CONTAINER as SHIPPER,
  apply,
  connect,
  containerNames,
  deploymentYaml,
  done,
  inClusterTarget,
  kubeconfigPath,
  pending,
  podsRunningWithProxy,
  repoRoot,
  runningWithSets as runningWithSetsOf,
  shipperSet,
  useInstall,
  waitFor,
  waitForRollout,
  webhookInjects,
  writeSets as writeSetsOf,
  type InClusterTarget,
} from '../src';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
const MINUTES = 60_000;

const target = inClusterTarget();
const skip =
  typeof target === 'string'
    ? target
    : target.shipperImage === undefined
      ? 'no log shipper image here (make images builds it; OUTRIGGER_E2E_SHIPPER_IMAGE on another cluster)'
      : undefined;
const describeInCluster = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`[e2e] sidecar-sets suite skipped: ${skip}\n`);

describeInCluster('sidecar sets, on a node that runs containers', () => {
  const cluster = connect();
  const { image, proxyValues, shipperImage } = target as InClusterTarget;
  let app = '';
  useInstall(cluster, { prefix: 'sets', image, values: proxyValues, created: (n) => (app = n) });

  const writeSets = (sets: unknown[]) => writeSetsOf(cluster, sets);
  const runningWithSets = (name: string, count: number) =>
    runningWithSetsOf(cluster, app, name, count);

  let shipperRevision = '';

  it(
    'injects the proxy and the log shipper into the same pods in one pass, both running beside the app',
    async () => {
      const text = await writeSets([shipperSet(shipperImage ?? '')]);
      shipperRevision = appliedSets(mustParseConfig(text))[0]?.revision ?? '';
      // The webhook applies the new configuration when it sees the ConfigMap: a Deployment made
      // before would get the previous one. A server-side dry run shows what the webhook does now.
      await webhookInjects(cluster, app, SHIPPER);
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
