// make bench-controller (issue 5, "Done when" 8): the controller's reaction time and memory at
// scale, on the local control plane (or the cluster of KUBECONFIG), beside the API server's own
// list time for the same objects, measured in the same run.
//
// It installs Outrigger as the e2e suites do, creates N Deployments (BENCH_WORKLOADS, default
// 2,000) in N/20 opted-in namespaces while the webhook stamps them, then starts the controller
// and measures: the time to its first steady state (every owner listed and assessed, the queue
// empty), its RSS, its writes over a quiet window (should be 0), and, after a configuration
// change, the time to the first restart and until every owner is stamped with the new revision.
// The Deployments have 0 replicas: the wave is the controller's work, not kwok's pods.

import { Watch, type V1Deployment } from '@kubernetes/client-node';
import {
  CONFIG_REVISION,
  INJECTION_LABEL,
  ENABLED,
  RESTARTED_REVISION,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  connect,
  metricSamples,
  metricSum,
  stopAllProcesses,
  TestInstall,
  waitFor,
  done,
  pending,
  type Cluster,
} from '../src';
import globalSetup from '../src/global-setup';
import globalTeardown from '../src/global-teardown';

const N = Number(process.env.BENCH_WORKLOADS ?? 2000);
const PER_NAMESPACE = 20;
const MAX_CONCURRENT = Number(process.env.BENCH_MAX_CONCURRENT ?? 100);
const WRITE_QPS = Number(process.env.BENCH_WRITE_QPS ?? 100);
const QUIET_MS = 10_000;
const QUIET_AFTER_MS = 60_000;

function configYaml(step: number): string {
  return `proxy:\n  env:\n    - name: BENCH_STEP\n      value: "${step}"\nrollout:\n  maxConcurrent: ${MAX_CONCURRENT}\n`;
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/** Runs `work` over `items` with at most `limit` at once. */
async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>) {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

function deployment(name: string): V1Deployment {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 0,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
}

async function createWorkloads(install: TestInstall): Promise<string[]> {
  const count = Math.ceil(N / PER_NAMESPACE);
  const namespaces: string[] = [];
  await pool([...Array(count).keys()], 10, async (i) => {
    // Labelled as the controller would, so the webhook stamps every Deployment on create.
    namespaces.push(
      await install.newNamespace(`bench-${i}`, {
        optedIn: true,
        labels: { [INJECTION_LABEL]: ENABLED },
      }),
    );
  });
  const work = [...Array(N).keys()].map((i) => ({
    namespace: namespaces[i % count] ?? '',
    name: `d${i}`,
  }));
  await pool(work, 20, async ({ namespace, name }) => {
    await install.cluster.apps.createNamespacedDeployment({ namespace, body: deployment(name) });
  });
  return namespaces;
}

/** The API server's own time to list the same Deployments: the baseline. */
async function listTimes(cluster: Cluster, runs = 5): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const list = await cluster.apps.listDeploymentForAllNamespaces();
    times.push(performance.now() - start);
    if (list.items.length < N)
      throw new Error(`listed ${list.items.length} Deployments, want ${N}`);
  }
  return times.sort((a, b) => a - b);
}

const templateRevision = (d: V1Deployment): string | undefined =>
  d.spec?.template.metadata?.annotations?.[CONFIG_REVISION];

/** Follows the Deployments of the bench namespaces from a watch: the first restart, and stamps. */
class StampWatch {
  firstRestartAt: number | undefined;
  allStampedAt: number | undefined;
  private readonly stamped = new Set<string>();
  private abort: AbortController | undefined;

  constructor(
    private readonly namespaces: ReadonlySet<string>,
    private readonly revision: string,
  ) {}

  async start(cluster: Cluster): Promise<void> {
    this.abort = await new Watch(cluster.kubeConfig).watch(
      '/apis/apps/v1/deployments',
      {},
      (_type: string, d: V1Deployment) => this.observe(d),
      () => undefined,
    );
  }

  private observe(d: V1Deployment): void {
    if (!d.metadata || !this.namespaces.has(d.metadata.namespace ?? '')) return;
    const now = performance.now();
    const restarted = d.metadata.annotations?.[RESTARTED_REVISION];
    if (restarted === this.revision) this.firstRestartAt ??= now;
    if (templateRevision(d) !== this.revision) return;
    this.stamped.add(JSON.stringify([d.metadata.namespace, d.metadata.name]));
    if (this.stamped.size >= N) this.allStampedAt ??= now;
  }

  get count(): number {
    return this.stamped.size;
  }

  stop(): void {
    this.abort?.abort();
  }
}

/** The controller's RSS and the V8 heap it uses (live objects and garbage not yet collected). */
async function memory(port: number): Promise<{ rss: number; heap: number }> {
  return {
    rss: await metricSum(port, 'outrigger_controller_process_resident_memory_bytes'),
    heap: await metricSum(port, 'outrigger_controller_nodejs_heap_size_used_bytes'),
  };
}

/** Waits until kube-controller-manager has observed every Deployment; returns how long. */
async function settle(cluster: Cluster): Promise<number> {
  // The Deployment controller must have seen every Deployment before ours can tell current
  // from rolling: its own catch-up is the cluster's, not ours.
  const start = performance.now();
  await waitFor(
    'kube-controller-manager to observe every Deployment',
    async () => {
      const { items } = await cluster.apps.listDeploymentForAllNamespaces();
      const behind = items.filter(
        (d) => (d.status?.observedGeneration ?? 0) < (d.metadata?.generation ?? 0),
      ).length;
      return behind === 0 ? done(undefined) : pending(behind);
    },
    { timeoutMs: 30 * 60_000, intervalMs: 2000 },
  );
  return performance.now() - start;
}

interface Steady {
  port: number;
  steadyMs: number;
  rss: number;
  heap: number;
  quietWrites: number;
}

/** Starts the controller and measures its way to the first steady state, and the quiet after. */
async function steadyState(install: TestInstall): Promise<Steady> {
  const started = performance.now();
  // prettier-ignore
  const controller = await install.startController('bench-controller', [
    '--write-qps', String(WRITE_QPS), '--write-burst', String(WRITE_QPS * 2), '--log-level', 'info',
  ]);
  const port = controller.metricsPort;
  await waitFor(
    'the controller to assess every owner with an empty queue',
    async () => {
      const owners = await metricSamples(port, 'outrigger_controller_owners');
      const current = owners.get('{state="current"}') ?? 0;
      const depth = await metricSum(port, 'outrigger_controller_queue_depth');
      return current >= N && depth === 0 ? done(undefined) : pending({ current, depth });
    },
    { timeoutMs: 10 * 60_000, intervalMs: 50 },
  );
  const steadyMs = performance.now() - started;
  const { rss, heap } = await memory(port);
  const writesBefore = await metricSum(port, 'outrigger_controller_writes_total');
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  const quietWrites = (await metricSum(port, 'outrigger_controller_writes_total')) - writesBefore;
  return { port, steadyMs, rss, heap, quietWrites };
}

/** Changes the configuration and times the first restart and the last stamp. */
async function wave(install: TestInstall, namespaces: string[], port: number) {
  const next = configYaml(1);
  const revision = makeSnapshot(mustParseConfig(next)).revision;
  const watch = new StampWatch(new Set(namespaces), revision);
  await watch.start(install.cluster);
  const changed = performance.now();
  await install.setConfig(next);
  await waitFor(
    `every Deployment stamped with revision ${revision}`,
    () => (watch.allStampedAt !== undefined ? done(undefined) : pending(watch.count)),
    { timeoutMs: 30 * 60_000, intervalMs: 200 },
  );
  watch.stop();
  return {
    firstMs: (watch.firstRestartAt ?? changed) - changed,
    allMs: (watch.allStampedAt ?? changed) - changed,
    ...(await memory(port)),
  };
}

async function run(): Promise<void> {
  const cluster = connect();
  const install = new TestInstall(cluster, { configYaml: configYaml(0) });
  try {
    await install.setup();
    const created = performance.now();
    const namespaces = await createWorkloads(install);
    const createMs = performance.now() - created;
    const settleMs = await settle(cluster);
    const list = await listTimes(cluster);
    const listMs = list[Math.floor(list.length / 2)] ?? 0;
    const steady = await steadyState(install);
    const w = await wave(install, namespaces, steady.port);
    // Garbage or kept? The same figures after a quiet minute, when V8 has had time to collect.
    await new Promise((resolve) => setTimeout(resolve, QUIET_AFTER_MS));
    const later = await memory(steady.port);
    const times = (ms: number): string => `${seconds(ms)} (${(ms / listMs).toFixed(1)}x the list)`;
    const rows: [string, string][] = [
      [`cluster: create ${N} Deployments (through the webhook)`, seconds(createMs)],
      ['cluster: kube-controller-manager observes them all, after that', seconds(settleMs)],
      [
        `API server: list ${N} Deployments (median of ${list.length}, the baseline)`,
        seconds(listMs),
      ],
      ['controller: start to first steady state', times(steady.steadyMs)],
      [
        'controller: RSS (V8 heap used) at steady state',
        `${mib(steady.rss)} (${mib(steady.heap)})`,
      ],
      [`controller: writes in ${QUIET_MS / 1000} s of steady state`, String(steady.quietWrites)],
      ['configuration change to the first restart', times(w.firstMs)],
      [`configuration change to every owner stamped (${N})`, times(w.allMs)],
      ['controller: RSS (V8 heap used) after the wave', `${mib(w.rss)} (${mib(w.heap)})`],
      [
        `controller: RSS (V8 heap used) ${QUIET_AFTER_MS / 1000} s later`,
        `${mib(later.rss)} (${mib(later.heap)})`,
      ],
    ];
    process.stdout.write(
      `\nbench-controller: N=${N} Deployments (0 replicas) in ${namespaces.length} namespaces, maxConcurrent ${MAX_CONCURRENT}, write limit ${WRITE_QPS}/s\n`,
    );
    for (const [what, value] of rows) process.stdout.write(`  ${what.padEnd(72)} ${value}\n`);
  } finally {
    await install.teardown();
    await cluster.close();
  }
}

async function main(): Promise<void> {
  await globalSetup();
  try {
    await run();
  } finally {
    await stopAllProcesses();
    await globalTeardown();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `bench-controller failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exitCode = 1;
});
