// What a rollback leaves behind, for every kind of owner and update strategy, on the local
// cluster's real node with the chart installed. The developers' report: a StatefulSet `db` with
// two replicas and the default OrderedReady management as a canary, and a new proxy that starts
// but never becomes Ready (it exits 0 at once, so the kubelet keeps restarting it). The gate fails
// and the template is reverted, but the StatefulSet controller waits for db-1 to become Ready
// before it replaces it, so db-1 stays on the bad revision until someone deletes it: Kubernetes'
// "forced rollback". Outrigger deletes it itself, and never a Ready pod. Beside it, in the same
// wave, the other kinds and strategies a rollback must leave Ready without an admin's hand: a
// Parallel StatefulSet, one with a partition, a Deployment with Recreate, a DaemonSet with
// maxSurge; and a StatefulSet with OnDelete, which a wave never restarts, so never rolls back.

import { Watch, type V1Pod } from '@kubernetes/client-node';
import { parseDocument } from 'yaml';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONFIG_REVISION,
  FORCED_ROLLBACK,
  INJECT,
  INJECTION_LABEL,
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
  createNamespace,
  createReleaseNamespace,
  done,
  dumpingOnFailure,
  helmRelease,
  inClusterTarget,
  kubeconfigPath,
  pending,
  podReady,
  podsRunningWithProxy,
  realNodeNamespaceAnnotations,
  removeRelease,
  repoRoot,
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
  /** Whether the wave restarts it as a canary. */
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

function statefulSet(name: string, replicas: number, spec: string): string {
  return `
apiVersion: v1
kind: Service
metadata: {name: ${name}}
spec: {clusterIP: None, selector: {app: ${name}}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ${name}, labels: {tier: canary}}
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

/** The owners as YAML: each labelled tier=canary but `steady` (the canary selector's label). */
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
metadata: {name: batch, labels: {tier: canary}}
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
metadata: {name: agent, labels: {tier: canary}}
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
  ready: boolean;
  revision: string | undefined;
  /** Whether it was Ready when it was first seen being deleted. */
  readyAtDeletion?: boolean;
}

/** Every pod of the namespace as a watch saw it: Ready or not, until it was deleted. */
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

  private observe(type: string, pod: V1Pod): void {
    const name = pod.metadata?.name ?? '';
    const before = this.pods.get(name);
    // A pod of a StatefulSet comes back under its own name: a new uid starts a new record.
    const same = before && before.readyAtDeletion === undefined;
    const seen: Seen = same ? before : { ready: false, revision: undefined };
    const deleting = type === 'DELETED' || pod.metadata?.deletionTimestamp !== undefined;
    if (deleting && seen.readyAtDeletion === undefined) seen.readyAtDeletion = seen.ready;
    if (!deleting) {
      seen.ready = podReady(pod);
      seen.revision = pod.metadata?.labels?.[REVISION];
    }
    this.pods.set(name, seen);
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

  beforeAll(async () => {
    await createReleaseNamespace(cluster);
    app = await createNamespace(cluster, {
      prefix: 'rollback',
      annotations: { ...realNodeNamespaceAnnotations(), [INJECT]: 'enabled' },
    });
    await helmRelease('install', SYSTEM_NAMESPACE, image, [
      ...proxyValues,
      `rollout.maxConcurrent=${CANARIES.length}`,
      'rollout.progressDeadlineSeconds=300',
      `rollout.canary.count=${CANARIES.length}`,
      'rollout.canary.soakSeconds=20',
      'rollout.canary.ownerSelector.matchLabels.tier=canary',
    ]);
    await waitFor(`namespace ${app} labelled ${INJECTION_LABEL}`, async () => {
      const ns = await cluster.core.readNamespace({ name: app });
      return ns.metadata?.labels?.[INJECTION_LABEL] === 'enabled'
        ? done(ns)
        : pending(ns.metadata?.labels);
    });
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

  afterAll(async () => {
    history?.stop();
    await removeRelease(cluster, app);
    await cluster.close();
  }, 3 * MINUTES);

  it(
    'a proxy that never becomes Ready: the canaries roll back, the stuck StatefulSet pods are deleted one at a time, never while Ready, and every pod ends Ready on the old revision',
    () =>
      dumpingOnFailure(cluster, [app, SYSTEM_NAMESPACE], async () => {
        const good = (await pinnedOf(OWNERS[0] as Owner)) ?? '';
        expect(good).not.toBe('');
        // A release of the proxy that exits 0 at once: it starts, and is never Ready.
        const doc = parseDocument((await configMap()).data?.[CONFIG_MAP_KEY] ?? '');
        doc.setIn(['proxy', 'env'], [{ name: 'E2E_STEP', value: 'never-ready' }]);
        doc.setIn(['proxy', 'args'], ['--exit-with=0']);
        await cluster.core.patchNamespacedConfigMap(
          {
            name: CONFIG_MAP_NAME,
            namespace: SYSTEM_NAMESPACE,
            body: { data: { [CONFIG_MAP_KEY]: doc.toString() } },
          },
          MERGE_PATCH,
        );
        const bad = configRevision(mustParseConfig(doc.toString()));

        const stopped = await waitFor(
          'the wave to the bad revision stopped by its gate',
          async () => {
            const cm = await configMap();
            const stop = annotation(cm, WAVE_STOPPED);
            return stop?.startsWith(bad)
              ? done(stop)
              : pending({ stopped: stop, stage: annotation(cm, WAVE_STAGE) });
          },
          { timeoutMs: 4 * MINUTES },
        );
        // The gate stopped it, on the proxy, not a rollout that stalled or ran out of time.
        expect(stopped).toMatch(/proxy-failing/);

        // Every canary was restarted to the bad revision and rolled back to the good one.
        await waitFor(
          'every canary rolled back',
          async () => {
            const seen = await Promise.all(
              CANARIES.map(async (o) => {
                const w = await workload(o);
                return {
                  name: o.name,
                  pinned: w.spec?.template.metadata?.annotations?.[CONFIG_REVISION],
                  from: annotation(w, ROLLED_BACK_FROM),
                };
              }),
            );
            return seen.every((s) => s.pinned === good && s.from === bad)
              ? done(seen)
              : pending(seen);
          },
          { timeoutMs: 3 * MINUTES },
        );

        // Without an admin's hand, every owner ends with every pod Ready on the good revision.
        for (const o of OWNERS) {
          const pods = await waitFor(
            `${o.kind} ${o.name}: ${o.pods} pods Ready on ${good}`,
            async () => {
              const live = await livePods(o);
              const onGood = live.filter((p) => p.metadata?.labels?.[REVISION] === good);
              return onGood.length === o.pods && live.length === o.pods && live.every(podReady)
                ? done(live)
                : pending(
                    live.map((p) => [
                      p.metadata?.name,
                      p.metadata?.labels?.[REVISION],
                      podReady(p),
                    ]),
                  );
            },
            { timeoutMs: 6 * MINUTES, intervalMs: 2000 },
          );
          expect(pods).toHaveLength(o.pods);
          await podsRunningWithProxy(cluster, app, `app=${o.name}`, o.pods);
        }

        // The StatefulSets the controller of Kubernetes does not repair got a forced rollback,
        // with an Event saying which pod and why; the others recovered by themselves.
        const forced = new Map<string, string[]>();
        for (const o of OWNERS) {
          const named = (await events(o.kind, o.name))
            .filter((e) => e.reason === 'ForcedRollback')
            .map((e) => /deleted pod (\S+)/.exec(e.message ?? '')?.[1] ?? '');
          forced.set(o.name, named);
        }
        expect(Object.fromEntries(forced)).toEqual({
          agent: [],
          batch: [],
          steady: [],
          cache: [],
          db: ['db-1'],
          ledger: [],
          queue: ['queue-1'],
        });
        for (const o of OWNERS.filter((x) => x.forced)) {
          const w = await workload(o);
          expect(annotation(w, FORCED_ROLLBACK)).toMatch(new RegExp(`^${bad} ${o.name}-1 `));
          const message = (await events(o.kind, o.name)).find(
            (e) => e.reason === 'ForcedRollback',
          )?.message;
          expect(message).toContain(`not Ready on ${bad}`);
          expect(message).toContain('OrderedReady');
        }

        // No pod Outrigger deleted was Ready when it was; each ran the bad revision.
        if (history?.ended) throw new Error(history.ended);
        for (const name of [...forced.values()].flat()) {
          const seen = history?.pods.get(name);
          expect({ name, seen }).toMatchObject({
            name,
            seen: { readyAtDeletion: false, revision: bad },
          });
        }

        // The owners outside the canaries were never restarted, and never ran the bad revision.
        for (const o of OWNERS.filter((x) => !x.canary)) {
          expect(annotation(await workload(o), RESTARTED_REVISION)).not.toBe(bad);
          for (const [name, seen] of history?.pods ?? [])
            if (name.startsWith(`${o.name}-`))
              expect({ name, r: seen.revision }).not.toEqual({ name, r: bad });
        }
        const { items } = await cluster.core.listNamespacedPod({
          namespace: app,
          labelSelector: `${REVISION}=${bad}`,
        });
        expect(items.map((p) => `${p.metadata?.labels?.[OWNER_NAME]}/${p.metadata?.name}`)).toEqual(
          [],
        );

        // outrigger status says what the forced rollback did and why.
        const table = await status();
        expect(table).toMatch(/stage rolled-back/);
        expect(table).toMatch(
          new RegExp(`db .*a forced rollback deleted db-1 .*not Ready on ${bad}`),
        );
      }),
    16 * MINUTES,
  );
});
