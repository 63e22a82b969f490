// What a rollback leaves behind, for every kind of owner and update strategy, on the local
// cluster's real node with the chart installed. The developers' report: a StatefulSet `db` with
// two replicas and the default OrderedReady management as a canary, and a new proxy that starts
// but never becomes Ready (it exits 0 at once, so the kubelet keeps restarting it). The gate fails
// and the template is reverted, but the StatefulSet controller waits for db-1 to become Ready
// before it replaces it, so db-1 stays on the bad revision until someone deletes it: Kubernetes'
// "forced rollback". Outrigger deletes it itself, and never a Ready pod. Then a second bad release
// with every kind and strategy a rollback must leave Ready without an admin's hand as canaries of
// one wave: a Parallel StatefulSet, one with a partition, a Deployment with Recreate, a DaemonSet
// with maxSurge, and the developers' StatefulSet again; beside them a StatefulSet with OnDelete,
// which a wave never restarts, so never rolls back.

import { Watch, type V1Pod } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONFIG_REVISION,
  FORCED_ROLLBACK,
  LAST_GOOD_REVISION,
  OWNER_NAME,
  RESTARTED_REVISION,
  REVISION,
  ROLLED_BACK_FROM,
  SYSTEM_NAMESPACE,
  WAVE_STAGE,
  WAVE_STOPPED,
  configRevision,
  mustParseConfig,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  PAUSE_IMAGE,
  REAL_NODE_SELECTOR,
  REAL_NODE_TAINT_KEY,
  apply,
  connect,
  done,
  dumpingOnFailure,
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
  type WorkloadKind,
} from '../src';
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
const MINUTES = 60_000;

interface Owner {
  kind: WorkloadKind;
  name: string;
  /** The pods it wants Ready at the end. */
  pods: number;
  /** Whether the second release's wave restarts it as a canary. */
  canary: boolean;
  /** Whether its pods on the bad revision need Outrigger to delete them. */
  forced: boolean;
  /** Whether it updates only pods that are deleted: no rollout to follow, only pods to count. */
  onDelete?: true;
}

/** The owners, in the planner's order; every canary is restarted in the same step. */
const OWNERS: readonly Owner[] = [
  { kind: 'DaemonSet', name: 'agent', pods: 1, canary: true, forced: false },
  { kind: 'Deployment', name: 'batch', pods: 1, canary: true, forced: false },
  { kind: 'Deployment', name: 'steady', pods: 1, canary: false, forced: false },
  { kind: 'StatefulSet', name: 'cache', pods: 2, canary: true, forced: false },
  { kind: 'StatefulSet', name: 'db', pods: 2, canary: true, forced: true },
  { kind: 'StatefulSet', name: 'ledger', pods: 1, canary: false, forced: false, onDelete: true },
  { kind: 'StatefulSet', name: 'queue', pods: 2, canary: true, forced: true },
];
const CANARIES = OWNERS.filter((o) => o.canary);

const container = (name: string) => `{containers: [{name: ${name}, image: ${PAUSE_IMAGE}}]}`;

/** The label the first release's canary selector matches (db only), and the second's. */
const labelsOf = (name: string): string =>
  name === 'db' ? '{tier: canary, ring: canary}' : '{ring: canary}';

function statefulSet(name: string, replicas: number, spec: string): string {
  return `
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec: {clusterIP: None, selector: {app: ${name}}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ${name}, labels: ${name === 'ledger' ? '{}' : labelsOf(name)}}
spec:
  serviceName: ${name}
  replicas: ${replicas}
  selector: {matchLabels: {app: ${name}}}${spec}
  template:
    metadata: {labels: {app: ${name}}}
    spec: ${container(name)}
`;
}

const [nodeLabel = '', nodeValue = ''] = REAL_NODE_SELECTOR.split('=');

/** The owners as YAML: the canaries of the second release labelled ring=canary, db also tier=canary. */
const MANIFESTS = [
  // The developers' StatefulSet: OrderedReady and RollingUpdate, the defaults.
  statefulSet('db', 2, ''),
  statefulSet('cache', 2, '\n  podManagementPolicy: Parallel'),
  statefulSet(
    'queue',
    2,
    '\n  updateStrategy: {type: RollingUpdate, rollingUpdate: {partition: 1}}',
  ),
  statefulSet('ledger', 1, '\n  updateStrategy: {type: OnDelete}'),
  `
apiVersion: apps/v1
kind: Deployment
metadata: {name: batch, labels: {ring: canary}}
spec:
  replicas: 1
  strategy: {type: Recreate}
  selector: {matchLabels: {app: batch}}
  template:
    metadata: {labels: {app: batch}}
    spec: ${container('batch')}
`,
  `
apiVersion: apps/v1
kind: Deployment
metadata: {name: steady}
spec:
  replicas: 1
  selector: {matchLabels: {app: steady}}
  template:
    metadata: {labels: {app: steady}}
    spec: ${container('steady')}
`,
  // On the real node only: the namespace's node selector would make its pods for other nodes
  // unschedulable.
  `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, labels: {ring: canary}}
spec:
  updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {${JSON.stringify(nodeLabel)}: ${JSON.stringify(nodeValue)}}
      tolerations: [{key: ${REAL_NODE_TAINT_KEY}, operator: Exists, effect: NoSchedule}]
      containers: [{name: agent, image: ${PAUSE_IMAGE}}]
`,
].join('\n---\n');

const target = inClusterTarget();
const describeInCluster = typeof target === 'string' ? describe.skip : describe;
if (typeof target === 'string')
  process.stderr.write(`[e2e] rollback-kinds suite skipped: ${target}\n`);

interface Seen {
  name: string;
  ready: boolean;
  revision: string | undefined;
  /** Whether it was Ready when it was first seen being deleted. */
  readyAtDeletion?: boolean;
}

/** Every pod of the namespace as a watch saw it, by uid: Ready or not, until it was deleted. */
class PodHistory {
  readonly pods = new Map<string, Seen>();
  ended: string | undefined;
  private abort: AbortController | undefined;
  private stopped = false;

  constructor(private readonly namespace: string) {}

  async start(kubeConfig: ConstructorParameters<typeof Watch>[0]): Promise<void> {
    this.abort = await new Watch(kubeConfig).watch(
      `/api/v1/namespaces/${this.namespace}/pods`,
      {},
      (type: string, pod: V1Pod) => this.observe(type, pod),
      (err: unknown) => {
        if (!this.stopped) this.ended = `the pod watch ended early: ${String(err)}`;
      },
    );
  }

  /** The pods of that name the watch saw, oldest first: a StatefulSet's come back under it. */
  named(name: string): Seen[] {
    return [...this.pods.values()].filter((p) => p.name === name);
  }

  private observe(type: string, pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const seen: Seen = this.pods.get(uid) ?? {
      name: pod.metadata?.name ?? '',
      ready: false,
      revision: undefined,
    };
    const deleting = type === 'DELETED' || pod.metadata?.deletionTimestamp !== undefined;
    if (deleting && seen.readyAtDeletion === undefined) seen.readyAtDeletion = seen.ready;
    if (!deleting) {
      seen.ready = podReady(pod);
      seen.revision = pod.metadata?.labels?.[REVISION];
    }
    this.pods.set(uid, seen);
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}

describeInCluster('a rollback leaves every kind of owner Ready on the old revision', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';
  let history: PodHistory | undefined;

  const configMap = () =>
    cluster.core.readNamespacedConfigMap({ name: CONFIG_MAP_NAME, namespace: SYSTEM_NAMESPACE });
  const annotation = (o: { metadata?: { annotations?: Record<string, string> } }, key: string) =>
    o.metadata?.annotations?.[key];

  async function workload(owner: Owner) {
    const args = { name: owner.name, namespace: app };
    switch (owner.kind) {
      case 'Deployment':
        return cluster.apps.readNamespacedDeployment(args);
      case 'StatefulSet':
        return cluster.apps.readNamespacedStatefulSet(args);
      case 'DaemonSet':
        return cluster.apps.readNamespacedDaemonSet(args);
    }
  }
  const pinnedOf = async (owner: Owner) =>
    (await workload(owner)).spec?.template.metadata?.annotations?.[CONFIG_REVISION];

  async function livePods(owner: Owner): Promise<V1Pod[]> {
    const { items } = await cluster.core.listNamespacedPod({
      namespace: app,
      labelSelector: `app=${owner.name}`,
    });
    return items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  async function events(kind: string, name: string) {
    const { items } = await cluster.core.listNamespacedEvent({
      namespace: app,
      fieldSelector: `involvedObject.kind=${kind},involvedObject.name=${name}`,
    });
    return items;
  }

  async function status(): Promise<string> {
    const { stdout } = await run(process.execPath, [CLI, 'status', '-n', app, '-o', 'wide'], {
      env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    });
    return stdout;
  }

  useInstall(cluster, {
    prefix: 'rollback',
    image,
    values: [
      ...proxyValues,
      `rollout.maxConcurrent=${CANARIES.length}`,
      'rollout.progressDeadlineSeconds=300',
      // The first release: the developers' StatefulSet alone is the canary.
      'rollout.canary.count=1',
      'rollout.canary.soakSeconds=20',
      'rollout.canary.ownerSelector.matchLabels.tier=canary',
    ],
    created: (name) => (app = name),
  });

  beforeAll(async () => {
    await apply(cluster, MANIFESTS, { namespace: app });
    for (const o of OWNERS.filter((x) => !x.onDelete))
      await waitForRollout(
        cluster,
        { kind: o.kind, namespace: app, name: o.name },
        { timeoutMs: 4 * MINUTES },
      );
    // The fleet was stamped at creation with the installed revision: its wave completes at once
    // and becomes the last good revision, which the rollback returns to.
    const installed = configRevision(
      mustParseConfig((await configMap()).data?.[CONFIG_MAP_KEY] ?? ''),
    );
    await waitFor(
      `the wave to ${installed} recorded good`,
      async () => {
        const cm = await configMap();
        return annotation(cm, LAST_GOOD_REVISION) === installed
          ? done(cm)
          : pending(annotation(cm, WAVE_STAGE));
      },
      { timeoutMs: 3 * MINUTES },
    );
    for (const o of OWNERS) await podsRunningWithProxy(cluster, app, `app=${o.name}`, o.pods);
    history = new PodHistory(app);
    await history.start(cluster.kubeConfig);
  }, 12 * MINUTES);

  afterAll(() => history?.stop());

  /** The installed revision, which every rollback returns to. */
  let good = '';

  /**
   * A release of the proxy that exits 0 at once: it starts, and is never Ready. `step` makes each
   * release another revision; `rollout` edits the rollout settings in the same write.
   */
  async function badRelease(step: string, rollout: Record<string, unknown> = {}): Promise<string> {
    const doc = parseDocument((await configMap()).data?.[CONFIG_MAP_KEY] ?? '');
    doc.setIn(['proxy', 'env'], [{ name: 'E2E_STEP', value: step }]);
    doc.setIn(['proxy', 'args'], ['--exit-with=0']);
    for (const [key, value] of Object.entries(rollout))
      doc.setIn(['rollout', ...key.split('.')], value);
    await cluster.core.patchNamespacedConfigMap(
      {
        name: CONFIG_MAP_NAME,
        namespace: SYSTEM_NAMESPACE,
        body: { data: { [CONFIG_MAP_KEY]: doc.toString() } },
      },
      MERGE_PATCH,
    );
    return configRevision(mustParseConfig(doc.toString()));
  }

  /** The wave to `bad` stopped, by the gate on the proxy: not a rollout that ran out of time. */
  async function stoppedByGate(bad: string): Promise<string> {
    const stopped = await waitFor(
      `the wave to ${bad} stopped by its gate`,
      async () => {
        const cm = await configMap();
        const stop = annotation(cm, WAVE_STOPPED);
        return stop?.startsWith(bad)
          ? done(stop)
          : pending({ stopped: stop, stage: annotation(cm, WAVE_STAGE) });
      },
      { timeoutMs: 4 * MINUTES },
    );
    expect(stopped).toMatch(/proxy-failing/);
    return stopped;
  }

  /** Every one of `owners` restarted to `bad` and rolled back to the good revision. */
  async function rolledBack(owners: readonly Owner[], bad: string): Promise<void> {
    await waitFor(
      `${owners.map((o) => o.name).join(', ')} rolled back from ${bad}`,
      async () => {
        const seen = await Promise.all(
          owners.map(async (o) => {
            const w = await workload(o);
            return {
              name: o.name,
              pinned: w.spec?.template.metadata?.annotations?.[CONFIG_REVISION],
              from: annotation(w, ROLLED_BACK_FROM),
            };
          }),
        );
        return seen.every((s) => s.pinned === good && s.from === bad) ? done(seen) : pending(seen);
      },
      { timeoutMs: 3 * MINUTES },
    );
  }

  /** Without an admin's hand, every owner ends with every pod Ready on the good revision. */
  async function everyPodReadyOnGood(): Promise<void> {
    for (const o of OWNERS) {
      const pods = await waitFor(
        `${o.kind} ${o.name}: ${o.pods} pods Ready on ${good}`,
        async () => {
          const live = await livePods(o);
          const onGood = live.filter((p) => p.metadata?.labels?.[REVISION] === good);
          return onGood.length === o.pods && live.length === o.pods && live.every(podReady)
            ? done(live)
            : pending(
                live.map((p) => [p.metadata?.name, p.metadata?.labels?.[REVISION], podReady(p)]),
              );
        },
        { timeoutMs: 6 * MINUTES, intervalMs: 2000 },
      );
      expect(pods).toHaveLength(o.pods);
      await podsRunningWithProxy(cluster, app, `app=${o.name}`, o.pods);
    }
  }

  /** The pods each owner's ForcedRollback Events name, from the rollback from `bad`. */
  async function forcedDeletions(bad: string): Promise<Record<string, string[]>> {
    const forced: Record<string, string[]> = {};
    for (const o of OWNERS)
      forced[o.name] = (await events(o.kind, o.name))
        .filter((e) => e.reason === 'ForcedRollback' && e.message?.includes(`on ${bad}`))
        .map((e) => /deleted pod (\S+)/.exec(e.message ?? '')?.[1] ?? '');
    return forced;
  }

  /**
   * Each pod Outrigger deleted ran the bad revision and was not Ready when it was deleted: of the
   * pods of that name, those on the bad revision were deleted, and none of them while Ready.
   */
  function neverDeletedReady(deleted: readonly string[], bad: string): void {
    if (history?.ended) throw new Error(history.ended);
    for (const name of deleted) {
      const onBad = (history?.named(name) ?? []).filter((p) => p.revision === bad);
      expect({ name, deletions: onBad.length }).not.toEqual({ name, deletions: 0 });
      for (const seen of onBad) expect(seen).toMatchObject({ name, readyAtDeletion: false });
    }
  }

  /** No pod runs `bad` any more, and the owners the wave did not restart never ran it. */
  async function nothingLeftOn(bad: string, restarted: readonly Owner[]): Promise<void> {
    for (const o of OWNERS.filter((x) => !restarted.includes(x))) {
      expect(annotation(await workload(o), RESTARTED_REVISION)).not.toBe(bad);
      for (const { name, revision } of history?.pods.values() ?? [])
        if (name.startsWith(`${o.name}-`))
          expect({ name, r: revision }).not.toEqual({ name, r: bad });
    }
    const { items } = await cluster.core.listNamespacedPod({
      namespace: app,
      labelSelector: `${REVISION}=${bad}`,
    });
    expect(items.map((p) => `${p.metadata?.labels?.[OWNER_NAME]}/${p.metadata?.name}`)).toEqual([]);
  }

  it(
    "the developers' report: a StatefulSet canary left not Ready by a proxy that never becomes Ready ends Ready on the old revision, its stuck pod deleted once, never while Ready",
    () =>
      dumpingOnFailure(cluster, [app, SYSTEM_NAMESPACE], async () => {
        const db = OWNERS.find((o) => o.name === 'db') as Owner;
        good = (await pinnedOf(db)) ?? '';
        expect(good).not.toBe('');
        const bad = await badRelease('never-ready');

        // The gate fails on db's own proxy: db-1 runs the bad revision, not Ready, and the
        // StatefulSet controller will not replace it by itself.
        const stop = await stoppedByGate(bad);
        expect(stop).toContain(`${app}/StatefulSet/db`);
        await rolledBack([db], bad);
        await everyPodReadyOnGood();

        expect(await forcedDeletions(bad)).toEqual({
          agent: [],
          batch: [],
          steady: [],
          cache: [],
          db: ['db-1'],
          ledger: [],
          queue: [],
        });
        const w = await workload(db);
        expect(annotation(w, FORCED_ROLLBACK)).toMatch(new RegExp(`^${bad} db-1 `));
        const message = (await events('StatefulSet', 'db')).find(
          (e) => e.reason === 'ForcedRollback',
        )?.message;
        expect(message).toContain(`not Ready on ${bad}`);
        expect(message).toContain('OrderedReady');
        neverDeletedReady(['db-1'], bad);
        await nothingLeftOn(bad, [db]);

        // outrigger status says what the forced rollback did and why.
        const table = await status();
        expect(table).toMatch(/stage rolled-back/);
        expect(table).toMatch(
          new RegExp(`db .*a forced rollback deleted db-1 .*not Ready on ${bad}`),
        );
      }),
    12 * MINUTES,
  );

  it(
    'every kind and strategy as canaries of one wave: each rolls back and ends Ready on the old revision; only pods of OrderedReady StatefulSets left not Ready are deleted, never while Ready',
    () =>
      dumpingOnFailure(cluster, [app, SYSTEM_NAMESPACE], async () => {
        expect(good).not.toBe('');
        const bad = await badRelease('never-ready-again', {
          maxConcurrent: CANARIES.length,
          'canary.count': CANARIES.length,
          'canary.ownerSelector': { matchLabels: { ring: 'canary' } },
        });
        await stoppedByGate(bad);
        await rolledBack(CANARIES, bad);
        await everyPodReadyOnGood();

        // Whether a StatefulSet's pod got to run the bad revision before the gate failed on
        // another canary is a race; a pod that did and was left not Ready is deleted. Only
        // OrderedReady StatefulSets' pods are, and only those the update reached (ordinal 1).
        const forced = await forcedDeletions(bad);
        for (const o of OWNERS)
          expect({ owner: o.name, deleted: forced[o.name] }).toEqual({
            owner: o.name,
            deleted: o.forced ? expect.arrayContaining([]) : [],
          });
        const deleted = Object.values(forced).flat();
        for (const name of deleted) expect(['db-1', 'queue-1']).toContain(name);
        neverDeletedReady(deleted, bad);
        await nothingLeftOn(bad, CANARIES);
        expect(await status()).toMatch(/stage rolled-back/);
      }),
    14 * MINUTES,
  );
});
