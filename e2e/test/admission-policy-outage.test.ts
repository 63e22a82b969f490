// The admission-policy mode on a node that runs containers: Outrigger installed from the chart with
// admission.mode=policy, the controller compiles each revision in use into a policy; with the
// webhook and the controller scaled to zero, new pods of an opted-in namespace still get their
// template's pinned revision (a scale-up) or the current one (a new Deployment); once the
// controller is back, the wave it runs restarts the pinned owner to the current revision as it does
// in the webhook mode, and the policy of the revision no owner needs any more is deleted. A
// Deployment made while no Outrigger pod ran has no stamp on its template, and is restarted once
// to get one, as a template predating the stamp is.

import type { V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_MAP_NAME,
  CONFIG_REVISION,
  LAST_GOOD_REVISION,
  REVISION,
  SKIPPED,
  SYSTEM_NAMESPACE,
  policyName,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  connect,
  deploymentYaml,
  done,
  editConfig,
  inClusterTarget,
  pending,
  podsRunningWithProxy,
  useInstall,
  waitFor,
  waitForRollout,
  type ConfigEdit,
  type InClusterTarget,
} from '../src';
import { controllerPolicies, policyApiAbsent, policyApiVersion } from '../src/policy';

const MINUTES = 60_000;
const target = inClusterTarget();
const describeInCluster = typeof target === 'string' ? describe.skip : describe;
if (typeof target === 'string')
  process.stderr.write(`[e2e] admission-policy outage suite skipped: ${target}\n`);

describeInCluster('injection with every Outrigger pod down (admission.mode=policy)', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';
  let version: Awaited<ReturnType<typeof policyApiVersion>>;
  useInstall(cluster, {
    prefix: 'policy-outage',
    image,
    values: [...proxyValues, 'admission.mode=policy'],
    created: (n) => (app = n),
  });

  beforeAll(async () => {
    version = await policyApiVersion(cluster);
    if (!version) policyApiAbsent('the admission-policy outage suite');
  });

  const keptPolicies = () => controllerPolicies(cluster, version);
  /** The names of the policies the controller keeps. */
  const policies = async () => (await keptPolicies()).map((p) => p.metadata?.name ?? '').sort();
  const proxyPolicies = async () =>
    (await policies()).filter((n) => n.startsWith('outrigger-proxy-'));

  async function policiesAre(revisions: string[]): Promise<void> {
    const want = revisions.map((r) => policyName('proxy', r)).sort();
    await waitFor(
      `the controller's policies for revisions ${revisions.join(', ')}`,
      async () => {
        const have = await proxyPolicies();
        return JSON.stringify(have) === JSON.stringify(want) ? done(have) : pending(have);
      },
      { timeoutMs: 2 * MINUTES, intervalMs: 1000 },
    );
  }

  async function scale(component: 'controller' | 'webhook', replicas: number): Promise<void> {
    await cluster.apps.patchNamespacedDeploymentScale(
      { name: `outrigger-${component}`, namespace: SYSTEM_NAMESPACE, body: { spec: { replicas } } },
      MERGE_PATCH,
    );
    await waitFor(
      `outrigger-${component} at ${replicas} pods`,
      async () => {
        const pods = (
          await cluster.core.listNamespacedPod({
            namespace: SYSTEM_NAMESPACE,
            labelSelector: `app.kubernetes.io/component=${component}`,
          })
        ).items;
        const ready = pods.filter((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        return pods.length === replicas && ready.length === replicas
          ? done(pods)
          : pending(pods.map((p) => p.metadata?.name));
      },
      { timeoutMs: 3 * MINUTES, intervalMs: 1000 },
    );
  }

  const revisionsOf = (pods: V1Pod[]) => pods.map((p) => p.metadata?.labels?.[REVISION]).sort();
  const livePods = async (selector: string) =>
    (
      await cluster.core.listNamespacedPod({ namespace: app, labelSelector: selector })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);

  let first = '';
  let second: ConfigEdit;

  it(
    'with the webhook and the controller at zero, a scale-up gets the pinned revision and a new Deployment the current one',
    async () => {
      if (!version) return;
      const cm = await cluster.core.readNamespacedConfigMap({
        name: CONFIG_MAP_NAME,
        namespace: SYSTEM_NAMESPACE,
      });
      expect(cm.data).toBeDefined();
      await apply(cluster, deploymentYaml('web', { replicas: 2 }), { namespace: app });
      await waitForRollout(
        cluster,
        { kind: 'Deployment', namespace: app, name: 'web' },
        { timeoutMs: 4 * MINUTES },
      );
      const pods = await podsRunningWithProxy(cluster, app, 'app=web', 2);
      first = pods[0]?.metadata?.labels?.[REVISION] ?? '';
      expect(revisionsOf(pods)).toEqual([first, first]);
      await policiesAre([first]);
      // The template pinned to it, by the controller's stamp.
      await waitFor('web stamped with its revision', async () => {
        const d = await cluster.apps.readNamespacedDeployment({ name: 'web', namespace: app });
        const stamp = d.spec?.template.metadata?.annotations?.[CONFIG_REVISION];
        return stamp === first ? done(stamp) : pending(stamp);
      });
      // A new revision, not rolled yet: both revisions' policies.
      second = await editConfig(cluster, (set) => {
        set(['proxy', 'logLevel'], 'debug');
        set(['rollout', 'mode'], 'manual');
        // No canary soak: the wave itself is what this suite watches, not its stages.
        set(['rollout', 'canary', 'count'], 0);
      });
      expect(second.proxy).not.toBe(first);
      await policiesAre([first, second.proxy]);

      await scale('webhook', 0);
      await scale('controller', 0);
      await cluster.apps.patchNamespacedDeploymentScale(
        { name: 'web', namespace: app, body: { spec: { replicas: 3 } } },
        MERGE_PATCH,
      );
      await apply(cluster, deploymentYaml('fresh', { replicas: 1 }), { namespace: app });
      const web = await podsRunningWithProxy(cluster, app, 'app=web', 3);
      expect(revisionsOf(web)).toEqual([first, first, first]);
      const fresh = await podsRunningWithProxy(cluster, app, 'app=fresh', 1);
      expect(revisionsOf(fresh)).toEqual([second.proxy]);
      for (const p of [...web, ...fresh]) expect(p.metadata?.labels?.[SKIPPED]).toBeUndefined();
    },
    12 * MINUTES,
  );

  it(
    'once the controller is back, its wave restarts the pinned owner to the current revision, and the unused policy goes',
    async () => {
      if (!version) return;
      // The first test brought the pinned owner and the new revision: without them, nothing to see.
      expect(second).toBeDefined();
      await scale('controller', 1);
      await scale('webhook', 1);
      await editConfig(cluster, (set) => set(['rollout', 'mode'], 'auto'));
      await waitFor(
        `web's pods all at ${second.proxy} and the wave recorded complete`,
        async () => {
          const cm = await cluster.core.readNamespacedConfigMap({
            name: CONFIG_MAP_NAME,
            namespace: SYSTEM_NAMESPACE,
          });
          const pods = await livePods('app=web');
          const at = revisionsOf(pods);
          return cm.metadata?.annotations?.[LAST_GOOD_REVISION] === second.proxy &&
            pods.length === 3 &&
            at.every((r) => r === second.proxy)
            ? done(at)
            : pending({ lastGood: cm.metadata?.annotations?.[LAST_GOOD_REVISION], at });
        },
        { timeoutMs: 6 * MINUTES, intervalMs: 2000 },
      );
      await podsRunningWithProxy(cluster, app, 'app=web', 3);
      // fresh was made with no Outrigger pod up, so its template carries no stamp: like a
      // template predating the stamp, the wave restarts it once to stamp it (docs/webhook.md).
      const replicaSets = (await cluster.apps.listNamespacedReplicaSet({ namespace: app })).items;
      const freshSets = replicaSets.filter((rs) =>
        rs.metadata?.ownerReferences?.some((o) => o.name === 'fresh'),
      );
      expect(freshSets.length).toBeLessThanOrEqual(2);
      expect(revisionsOf(await podsRunningWithProxy(cluster, app, 'app=fresh', 1))).toEqual([
        second.proxy,
      ]);
      await policiesAre([second.proxy]);
      // Owned by the install's ClusterRole: uninstalling has the garbage collector delete them.
      for (const p of await keptPolicies())
        expect(p.metadata?.ownerReferences?.map((o) => `${o.kind}/${o.name}`)).toEqual([
          'ClusterRole/outrigger-controller',
        ]);
    },
    10 * MINUTES,
  );
});
