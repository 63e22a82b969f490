// Each sidecar set rolls on its own, on a node that runs containers: the proxy and a log shipper
// set on the same owners (one owner opted out of the shipper). A change of the shipper's image
// alone restarts only the owners that carry it, each once, and moves no proxy revision; the proxy
// and the shipper changed at once cost each owner one restart; a shipper revision whose canary
// crash-loops is stopped at its canary and rolled back, and neither the proxy's wave nor an owner
// outside the canary moves. The tests share one release and build on each other, in order.

import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_MAP_NAME,
  CONFIG_REVISION,
  LAST_GOOD_REVISION,
  REVISION,
  SYSTEM_NAMESPACE,
  WAVE_STOPPED,
  setInjectKey,
  setWaveKeys,
} from '@outrigger/shared';
import {
  SHIPPER_CONTAINER,
  SHIPPER_SET,
  apply,
  connect,
  containerNames,
  deploymentYaml,
  done,
  editConfig,
  inClusterTarget,
  pending,
  runningWithSets,
  shipperSet,
  useInstall,
  waitFor,
  webhookInjects,
  type ConfigEdit,
  type InClusterTarget,
} from '../src';

const MINUTES = 60_000;
const KEYS = setWaveKeys(SHIPPER_SET);
/** web (2 pods) and canary (1, the shipper's canary owner) carry the shipper; solo opted out. */
const CARRIERS = { web: 2, canary: 1 } as const;
const OWNERS = { ...CARRIERS, solo: 1 } as const;
type Owner = keyof typeof OWNERS;
const ALL = Object.keys(OWNERS) as Owner[];

const target = inClusterTarget();
const skip =
  typeof target === 'string'
    ? target
    : target.shipperImage === undefined || target.shipperImageNext === undefined
      ? 'no log shipper images here (make images builds one the node knows by two names; OUTRIGGER_E2E_SHIPPER_IMAGE and OUTRIGGER_E2E_SHIPPER_IMAGE_NEXT on another cluster)'
      : undefined;
const describeInCluster = skip === undefined ? describe : describe.skip;
if (skip !== undefined) process.stderr.write(`[e2e] sidecar-set waves suite skipped: ${skip}\n`);

const template = (d: V1Deployment) => d.spec?.template.metadata?.annotations ?? {};
const annotations = (o: { metadata?: { annotations?: Record<string, string> } }) =>
  o.metadata?.annotations ?? {};

describeInCluster('each sidecar set rolls on its own, on a node that runs containers', () => {
  const cluster = connect();
  const {
    image,
    proxyValues,
    shipperImage = '',
    shipperImageNext = '',
  } = target as InClusterTarget;
  let app = '';
  useInstall(cluster, {
    prefix: 'set-waves',
    image,
    values: proxyValues,
    created: (n) => (app = n),
  });

  const configMap = () =>
    cluster.core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: SYSTEM_NAMESPACE });
  const deployment = (name: Owner) =>
    cluster.apps.readNamespacedDeployment({ name, namespace: app });
  /** The ReplicaSets of each owner: one more for every rollout it made. */
  async function replicaSets(): Promise<Record<Owner, number>> {
    const { items } = await cluster.apps.listNamespacedReplicaSet({ namespace: app });
    const count = (name: Owner) =>
      items.filter((rs) => rs.metadata?.ownerReferences?.some((o) => o.name === name)).length;
    return { web: count('web'), canary: count('canary'), solo: count('solo') };
  }
  /**
   * Waits until both waves are recorded complete at the revisions given, every owner's template
   * stamped with them (the shipper's on the owners that carry it) and its rollout done.
   */
  async function wavesComplete(edit: ConfigEdit): Promise<void> {
    const shipper = edit.sets.get(SHIPPER_SET) ?? '';
    await waitFor(
      `the proxy's wave to ${edit.proxy} and the shipper's to ${shipper} complete`,
      async () => {
        const cm = annotations(await configMap());
        const ds = await Promise.all(ALL.map(deployment));
        const behind = ds.filter((d) => {
          const t = template(d);
          const carries = d.metadata?.name !== 'solo';
          const stamped =
            t[CONFIG_REVISION] === edit.proxy && (!carries || t[KEYS.configRevision] === shipper);
          const rolled =
            d.status?.observedGeneration === d.metadata?.generation &&
            d.status?.updatedReplicas === d.spec?.replicas &&
            d.status?.readyReplicas === d.spec?.replicas &&
            d.status?.replicas === d.spec?.replicas;
          return !stamped || !rolled;
        });
        return cm[LAST_GOOD_REVISION] === edit.proxy &&
          cm[KEYS.lastGood] === shipper &&
          behind.length === 0
          ? done(undefined)
          : pending({
              proxy: cm[LAST_GOOD_REVISION],
              shipper: cm[KEYS.lastGood],
              stopped: cm[KEYS.waveStopped],
              behind: behind.map((d) => [d.metadata?.name, template(d)[KEYS.configRevision]]),
            });
      },
      { timeoutMs: 5 * MINUTES, intervalMs: 1000 },
    );
  }

  /**
   * Every pod of every owner, once the old ones are gone: the proxy at `proxy`, the shipper
   * (where carried) at `shipper`. Gives them by owner.
   */
  async function podsAt(proxy: string, shipper: string): Promise<Map<Owner, V1Pod[]>> {
    const byOwner = new Map<Owner, V1Pod[]>();
    for (const [name, count] of Object.entries(OWNERS) as [Owner, number][]) {
      const running = await runningWithSets(cluster, app, name, count);
      byOwner.set(name, running);
      for (const pod of running) {
        const labels = pod.metadata?.labels ?? {};
        expect([name, labels[REVISION]]).toEqual([name, proxy]);
        if (name === 'solo') expect(containerNames(pod)).not.toContain(SHIPPER_CONTAINER);
        else expect([name, labels[KEYS.podRevision]]).toEqual([name, shipper]);
      }
    }
    return byOwner;
  }

  let first: ConfigEdit;

  beforeAll(async () => {
    // The proxy's wave without canaries: this suite is about the shipper's.
    first = await editConfig(cluster, (set) => {
      set(['rollout', 'canary', 'count'], 0);
      set(['sets'], [shipperSet(shipperImage, { rollout: { canary: { count: 0 } } })]);
    });
    await webhookInjects(cluster, app, SHIPPER_CONTAINER);
    await apply(cluster, deploymentYaml('web', { replicas: 2 }), { namespace: app });
    await apply(cluster, deploymentYaml('canary', { ownerLabels: { canary: 'yes' } }), {
      namespace: app,
    });
    await apply(
      cluster,
      deploymentYaml('solo', { templateAnnotations: { [setInjectKey(SHIPPER_SET)]: 'disabled' } }),
      { namespace: app },
    );
    await wavesComplete(first);
  }, 8 * MINUTES);

  let second: ConfigEdit;

  it(
    "a change of the shipper's image alone restarts only the owners that carry it, once each, and moves no proxy revision",
    async () => {
      await podsAt(first.proxy, first.sets.get(SHIPPER_SET) ?? '');
      const before = await replicaSets();
      const soloBefore = await deployment('solo');
      second = await editConfig(cluster, (set) =>
        set(['sets'], [shipperSet(shipperImageNext, { rollout: { canary: { count: 0 } } })]),
      );
      expect(second.proxy).toBe(first.proxy);
      expect(second.sets.get(SHIPPER_SET)).not.toBe(first.sets.get(SHIPPER_SET));
      // The positive signal: the shipper's wave recorded complete at its new revision.
      await wavesComplete(second);
      expect(await replicaSets()).toEqual({
        web: before.web + 1,
        canary: before.canary + 1,
        solo: before.solo,
      });
      const solo = await deployment('solo');
      expect(solo.metadata?.generation).toBe(soloBefore.metadata?.generation);
      expect(template(solo)[KEYS.configRevision]).toBeUndefined();
      const running = await podsAt(first.proxy, second.sets.get(SHIPPER_SET) ?? '');
      for (const pod of running.get('web') ?? []) {
        const shipper = pod.spec?.initContainers?.find((c) => c.name === SHIPPER_CONTAINER);
        expect(shipper?.image).toBe(shipperImageNext);
      }
      const { items } = await cluster.core.listNamespacedEvent({
        namespace: app,
        fieldSelector: 'involvedObject.kind=Deployment,involvedObject.name=web,reason=Restarted',
      });
      expect(items.map((e) => e.message)).toContainEqual(
        expect.stringContaining(
          `set ${SHIPPER_SET}: restarted to roll out configuration revision ${second.sets.get(SHIPPER_SET)}`,
        ),
      );
    },
    7 * MINUTES,
  );

  let third: ConfigEdit;

  it(
    'the proxy and the shipper changed at once cost each owner one restart',
    async () => {
      const before = await replicaSets();
      third = await editConfig(cluster, (set) => {
        set(['proxy', 'env'], [{ name: 'E2E_STEP', value: 'both' }]);
        set(['sets'], [shipperSet(shipperImage, { rollout: { canary: { count: 0 } } })]);
      });
      expect(third.proxy).not.toBe(second.proxy);
      await wavesComplete(third);
      // solo restarts for the proxy alone; the others once for both.
      expect(await replicaSets()).toEqual({
        web: before.web + 1,
        canary: before.canary + 1,
        solo: before.solo + 1,
      });
      await podsAt(third.proxy, third.sets.get(SHIPPER_SET) ?? '');
    },
    7 * MINUTES,
  );

  it(
    "a shipper revision whose canary crash-loops is rolled back alone: the proxy's wave and the other owners do not move",
    async () => {
      const good = third.sets.get(SHIPPER_SET) ?? '';
      const before = await replicaSets();
      const webBefore = await deployment('web');
      const bad =
        (
          await editConfig(cluster, (set) =>
            set(
              ['sets'],
              [
                shipperSet(shipperImage, {
                  env: [{ name: 'SHIPPER_PORT', value: '0' }],
                  rollout: {
                    canary: {
                      count: 1,
                      soakSeconds: 5,
                      ownerSelector: { matchLabels: { canary: 'yes' } },
                    },
                  },
                }),
              ],
            ),
          )
        ).sets.get(SHIPPER_SET) ?? '';
      expect(bad).not.toBe(good);
      const stopped = await waitFor(
        "the shipper's wave stopped at its canary",
        async () => {
          const cm = annotations(await configMap());
          const { items } = await cluster.core.listNamespacedEvent({
            namespace: app,
            fieldSelector:
              'involvedObject.kind=Deployment,involvedObject.name=canary,reason=GateFailed',
          });
          return cm[KEYS.waveStopped]?.startsWith(bad) && items.length > 0
            ? done({ cm, gate: items })
            : pending({ stopped: cm[KEYS.waveStopped], stage: cm[KEYS.waveStage] });
        },
        { timeoutMs: 4 * MINUTES, intervalMs: 1000 },
      );
      expect(stopped.gate.map((e) => e.message).join(' ')).toContain(SHIPPER_CONTAINER);
      expect(stopped.cm[WAVE_STOPPED]).toBeUndefined();
      await waitFor(
        'the canary rolled back to the last good shipper',
        async () => {
          const d = await deployment('canary');
          return template(d)[KEYS.configRevision] === good &&
            annotations(d)[KEYS.rolledBackFrom] === bad &&
            d.status?.readyReplicas === 1 &&
            d.status.updatedReplicas === 1 &&
            d.status.replicas === 1
            ? done(d)
            : pending({ pinned: template(d)[KEYS.configRevision], status: d.status });
        },
        { timeoutMs: 4 * MINUTES, intervalMs: 1000 },
      );
      // Seen stopped and rolled back: web (outside the canary) and solo never restarted.
      const after = await replicaSets();
      expect([after.web, after.solo]).toEqual([before.web, before.solo]);
      const web = await deployment('web');
      expect(web.metadata?.generation).toBe(webBefore.metadata?.generation);
      expect(template(web)[KEYS.configRevision]).toBe(good);
      expect(template(await deployment('canary'))[CONFIG_REVISION]).toBe(third.proxy);
      expect(annotations(await configMap())[LAST_GOOD_REVISION]).toBe(third.proxy);
      await podsAt(third.proxy, good);
    },
    8 * MINUTES,
  );
});
