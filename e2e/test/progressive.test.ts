// Upgrades the controller really controls, shown on the local cluster's real node with the chart
// installed and the demo proxy really running: a good revision goes canary first, soaks, then
// reaches the rest; a revision whose proxy crash-loops is stopped at its canary and rolled back
// while a scale-up elsewhere keeps getting the old proxy; a leader change during the soak
// neither skips it nor restarts an owner twice; a closed maintenance window holds the wave until
// it opens. The tests share one release and build on each other, in order.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { type V1Deployment, type V1Pod } from '@kubernetes/client-node';
import {
  CANARY_REVISION,
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONFIG_REVISION,
  LAST_GOOD_REVISION,
  OWNER_NAME,
  RESTARTED_AT,
  RESTARTED_REVISION,
  REVISION,
  ROLLED_BACK_FROM,
  SYSTEM_NAMESPACE,
  WAVE_STAGE,
  WAVE_STOPPED,
  configRevision,
  historyConfigMapName,
  mustParseConfig,
  parseTime,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  PROXY_CONTAINER,
  apply,
  connect,
  deploymentYaml,
  done,
  editConfig as editConfigOf,
  inClusterTarget,
  leaseHolder,
  kubeconfigPath,
  pending,
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
const SOAK_SECONDS = 12;
/** The canary: the one owner the canary selector matches. */
const CANARY = 'canary';
const OTHERS = ['steady', 'scaled'];
const OWNERS = [CANARY, ...OTHERS];

const target = inClusterTarget();
const describeInCluster = typeof target === 'string' ? describe.skip : describe;
if (typeof target === 'string')
  process.stderr.write(`[e2e] progressive-upgrade suite skipped: ${target}\n`);

const annotation = (d: { metadata?: { annotations?: Record<string, string> } }, key: string) =>
  d.metadata?.annotations?.[key];
const pinnedOf = (d: V1Deployment): string =>
  d.spec?.template.metadata?.annotations?.[CONFIG_REVISION] ?? '';
const restartedAtMs = (d: V1Deployment): number =>
  parseTime(annotation(d, RESTARTED_AT)) ?? Number.NaN;

describeInCluster('upgrades the controller controls, on a node that runs containers', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';

  const configMap = () =>
    cluster.core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: SYSTEM_NAMESPACE });
  const deployment = (name: string) =>
    cluster.apps.readNamespacedDeployment({ name, namespace: app });
  const deployments = async () => Promise.all(OWNERS.map(deployment));

  /** Edits config.yaml in the ConfigMap the way an admin would; returns the new revision. */
  const editConfig = async (edit: Parameters<typeof editConfigOf>[1]) =>
    (await editConfigOf(cluster, edit)).proxy;

  /** A good revision: only an environment variable of the proxy differs. */
  const goodRevision = (step: number) =>
    editConfig((set) => {
      set(['proxy', 'env'], [{ name: 'E2E_STEP', value: String(step) }]);
      set(['proxy', 'args'], []);
    });

  async function events(kind: string, name: string, namespace: string) {
    const { items } = await cluster.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
    });
    return items;
  }

  const replicaSets = async (owner: string) =>
    (await cluster.apps.listNamespacedReplicaSet({ namespace: app })).items.filter((rs) =>
      rs.metadata?.ownerReferences?.some((o) => o.name === owner),
    ).length;

  /** Waits for the wave to `revision` to complete: every owner on it, and it recorded good. */
  async function waveComplete(revision: string, timeoutMs = 6 * MINUTES) {
    await waitFor(
      `the wave to ${revision} complete`,
      async () => {
        const cm = await configMap();
        const ds = await deployments();
        const on = ds.filter(
          (d) => pinnedOf(d) === revision && d.status?.updatedReplicas === d.spec?.replicas,
        );
        return annotation(cm, LAST_GOOD_REVISION) === revision && on.length === OWNERS.length
          ? done(ds)
          : pending({
              stage: annotation(cm, WAVE_STAGE),
              stopped: annotation(cm, WAVE_STOPPED),
              owners: ds.map((d) => [d.metadata?.name, pinnedOf(d), d.status?.readyReplicas]),
            });
      },
      { timeoutMs, intervalMs: 1000 },
    );
    for (const name of OWNERS) {
      const d = await deployment(name);
      await podsRunningWithProxy(cluster, app, `app=${name}`, d.spec?.replicas ?? 1);
    }
  }

  async function status(): Promise<string> {
    const { stdout } = await run(process.execPath, [CLI, 'status', '-n', app], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    });
    return stdout;
  }

  useInstall(cluster, {
    prefix: 'progressive',
    image,
    values: [
      ...proxyValues,
      // two controllers, so the leader can go during a soak
      'profile=ha',
      'rollout.maxConcurrent=2',
      'rollout.progressDeadlineSeconds=300',
      'rollout.canary.count=1',
      `rollout.canary.soakSeconds=${SOAK_SECONDS}`,
      'rollout.canary.ownerSelector.matchLabels.tier=canary',
    ],
    created: (name) => (app = name),
  });

  beforeAll(async () => {
    await apply(cluster, deploymentYaml(CANARY, { ownerLabels: { tier: 'canary' } }), {
      namespace: app,
    });
    await apply(cluster, deploymentYaml('steady'), { namespace: app });
    await apply(cluster, deploymentYaml('scaled', { replicas: 2 }), { namespace: app });
    for (const name of OWNERS)
      await waitForRollout(
        cluster,
        { kind: 'Deployment', namespace: app, name },
        { timeoutMs: 4 * MINUTES },
      );
    // The fleet was stamped at creation with the installed revision: that wave completes at
    // once, and its revision becomes the last good one, which a rollback returns to.
    const installed = configRevision(
      mustParseConfig((await configMap()).data?.[CONFIG_MAP_KEY] ?? ''),
    );
    await waveComplete(installed);
  }, 12 * MINUTES);

  it(
    'a good revision: the canary restarts, soaks, then the rest follows; every owner ends on it',
    async () => {
      const r1 = await goodRevision(1);
      await waveComplete(r1);
      const [canary, ...others] = await deployments();
      if (!canary) throw new Error('no canary');
      expect(annotation(canary, CANARY_REVISION)).toBe(r1);
      for (const d of others) {
        expect(annotation(d, CANARY_REVISION)).toBeUndefined();
        // the rest started only once the canary had passed the gate and soaked
        expect(restartedAtMs(d)).toBeGreaterThanOrEqual(
          restartedAtMs(canary) + SOAK_SECONDS * 1000,
        );
      }
      const pods = (await cluster.core.listNamespacedPod({ namespace: app })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      expect(new Set(pods.map((p) => p.metadata?.labels?.[REVISION]))).toEqual(new Set([r1]));
      const reasons = (await events('ConfigMap', CONFIG_MAP_NAME, SYSTEM_NAMESPACE)).map(
        (e) => e.reason,
      );
      expect(reasons).toEqual(expect.arrayContaining(['WaveStage', 'WaveComplete']));
      expect(await status()).toMatch(new RegExp(`stage complete: .*last good revision ${r1}`));
    },
    8 * MINUTES,
  );

  it(
    'a crash-looping proxy: only the canary restarts, a scale-up elsewhere gets the old proxy, the wave stops and rolls the canary back',
    async () => {
      const good = pinnedOf(await deployment(CANARY));
      const setsBefore = new Map(
        await Promise.all(OTHERS.map(async (n) => [n, await replicaSets(n)] as const)),
      );
      const bad = await editConfig((set) => {
        set(['proxy', 'env'], [{ name: 'E2E_STEP', value: '2' }]);
        set(['proxy', 'args'], ['--exit-with=3']);
      });
      /** No pod of the others ever runs the bad revision, checked at every look. */
      const neverBad = async () => {
        const pods = (
          await cluster.core.listNamespacedPod({
            namespace: app,
            labelSelector: `${REVISION}=${bad}`,
          })
        ).items;
        const outside = pods.filter((p) => p.metadata?.labels?.[OWNER_NAME] !== CANARY);
        expect(outside.map((p) => p.metadata?.name)).toEqual([]);
      };
      await waitFor(
        'the canary restarted to the bad revision',
        async () => {
          await neverBad();
          const d = await deployment(CANARY);
          return annotation(d, RESTARTED_REVISION) === bad
            ? done(d)
            : pending(annotation(d, RESTARTED_REVISION));
        },
        { timeoutMs: 2 * MINUTES },
      );
      // during the wave, a Deployment outside the canary doubles
      await cluster.apps.patchNamespacedDeployment(
        { name: 'scaled', namespace: app, body: { spec: { replicas: 4 } } },
        MERGE_PATCH,
      );
      const stopped = await waitFor(
        'the wave stopped with the failing container named',
        async () => {
          await neverBad();
          const cm = await configMap();
          const gate = (await events('Deployment', CANARY, app)).find(
            (e) => e.reason === 'GateFailed',
          );
          return annotation(cm, WAVE_STOPPED)?.startsWith(bad) && gate
            ? done({ cm, gate })
            : pending({ stopped: annotation(cm, WAVE_STOPPED), stage: annotation(cm, WAVE_STAGE) });
        },
        { timeoutMs: 3 * MINUTES },
      );
      expect(stopped.gate.message).toContain(PROXY_CONTAINER);
      expect(stopped.gate.message).toMatch(/proxy-failing/);
      const onConfigMap = await events('ConfigMap', CONFIG_MAP_NAME, SYSTEM_NAMESPACE);
      expect(
        onConfigMap.some((e) => e.reason === 'WaveStopped' && e.message?.includes(PROXY_CONTAINER)),
      ).toBe(true);

      // rolled back: the canary is pinned to the last good revision again, and Ready on it
      await waitFor(
        'the canary rolled back to the last good revision',
        async () => {
          await neverBad();
          const d = await deployment(CANARY);
          return pinnedOf(d) === good &&
            annotation(d, ROLLED_BACK_FROM) === bad &&
            d.status?.readyReplicas === 1 &&
            d.status.updatedReplicas === 1
            ? done(d)
            : pending({
                pinned: pinnedOf(d),
                from: annotation(d, ROLLED_BACK_FROM),
                ready: d.status?.readyReplicas,
              });
        },
        { timeoutMs: 4 * MINUTES },
      );
      const canaryPods = await podsRunningWithProxy(cluster, app, `app=${CANARY}`, 1);
      expect(canaryPods.map((p) => p.metadata?.labels?.[REVISION])).toEqual([good]);
      // the scale-up's new pods run the old proxy: they are pinned to their template's revision
      const scaled = await podsRunningWithProxy(cluster, app, 'app=scaled', 4);
      expect(scaled.map((p: V1Pod) => p.metadata?.labels?.[REVISION])).toEqual([
        good,
        good,
        good,
        good,
      ]);
      await neverBad();
      // only the canary was ever restarted: the others kept their ReplicaSets and their revision
      for (const name of OTHERS) {
        const d = await deployment(name);
        expect({ name, pinned: pinnedOf(d), sets: await replicaSets(name) }).toEqual({
          name,
          pinned: good,
          sets: setsBefore.get(name),
        });
        expect(annotation(d, RESTARTED_REVISION)).not.toBe(bad);
      }
      expect(await status()).toMatch(/stage rolled-back/);
    },
    10 * MINUTES,
  );

  it(
    'a leader change during the soak neither skips the gate nor restarts an owner twice',
    async () => {
      const sets = new Map(
        await Promise.all(OWNERS.map(async (n) => [n, await replicaSets(n)] as const)),
      );
      const r3 = await goodRevision(3);
      const soak = await waitFor(
        'the canary soaking',
        async () => {
          const stage = annotation(await configMap(), WAVE_STAGE) ?? '';
          return stage.startsWith(`${r3} soaking`) ? done(stage) : pending(stage);
        },
        { timeoutMs: 3 * MINUTES, intervalMs: 500 },
      );
      const soakSinceMs = parseTime(soak.split(' ')[2]) ?? Number.NaN;
      const canaryAt = restartedAtMs(await deployment(CANARY));
      const leader = await leaseHolder(cluster);
      expect(leader).not.toBe('');
      await cluster.core.deleteNamespacedPod({
        name: leader.replace(/-[0-9a-f]{8}$/, ''),
        namespace: SYSTEM_NAMESPACE,
      });
      await waveComplete(r3);
      expect(await leaseHolder(cluster)).not.toBe(leader);
      // the canary restarted once, before the leader change, and not again after it
      expect(restartedAtMs(await deployment(CANARY))).toBe(canaryAt);
      for (const name of OTHERS) {
        const d = await deployment(name);
        expect(restartedAtMs(d)).toBeGreaterThanOrEqual(soakSinceMs + SOAK_SECONDS * 1000);
      }
      // exactly one new ReplicaSet per owner: one restart each
      for (const name of OWNERS)
        expect({ name, sets: await replicaSets(name) }).toEqual({
          name,
          sets: (sets.get(name) ?? 0) + 1,
        });
    },
    10 * MINUTES,
  );

  it(
    'with the maintenance window closed nothing restarts; when it opens the wave proceeds',
    async () => {
      // a window opening on the next whole minute at least 30 s away, by the test's own clock
      // (the controller's WaveWaiting Event has come within seconds of the edit)
      const opensMs = Math.ceil((Date.now() + 30_000) / 60_000) * 60_000;
      const hhmm = (ms: number) => new Date(ms).toISOString().slice(11, 16);
      const before = await deployments();
      const r4 = await editConfig((set) => {
        set(['proxy', 'env'], [{ name: 'E2E_STEP', value: '4' }]);
        set(
          ['rollout', 'windows'],
          [{ start: hhmm(opensMs), end: hhmm(opensMs + 30 * MINUTES), timeZone: 'UTC' }],
        );
      });
      // the controller saw the change and decided to wait: its Event says until when
      const waiting = await waitFor(
        'the controller waiting for the window',
        async () => {
          const e = (await events('ConfigMap', CONFIG_MAP_NAME, SYSTEM_NAMESPACE)).find(
            (x) => x.reason === 'WaveWaiting' && x.message?.includes(r4),
          );
          return e ? done(e) : pending('no WaveWaiting event yet');
        },
        { timeoutMs: MINUTES },
      );
      expect(Date.now()).toBeLessThan(opensMs);
      expect(waiting.message).toContain(new Date(opensMs).toISOString().replace(/\.\d{3}Z$/, 'Z'));
      const history = await cluster.core.readNamespacedConfigMap({
        name: historyConfigMapName(CONFIG_MAP_NAME),
        namespace: SYSTEM_NAMESPACE,
      });
      expect(Object.keys(history.data ?? {})).toContain(r4);
      // nothing restarted after the decision to wait
      const now = await deployments();
      expect(now.map(pinnedOf)).toEqual(before.map(pinnedOf));
      expect(now.map((d) => annotation(d, RESTARTED_AT))).toEqual(
        before.map((d) => annotation(d, RESTARTED_AT)),
      );
      expect(await status()).toContain(
        `the next opens at ${new Date(opensMs).toISOString().replace(/\.\d{3}Z$/, 'Z')}`,
      );

      await waveComplete(r4, 8 * MINUTES);
      for (const d of await deployments()) expect(restartedAtMs(d)).toBeGreaterThanOrEqual(opensMs);
    },
    12 * MINUTES,
  );
});
