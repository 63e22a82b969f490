// make bench-controller: the controller's cost as the cluster grows, on the local control plane
// (or the cluster of KUBECONFIG), beside the API server's own list of the same objects, measured
// in the same run.
//
// It installs Outrigger as the e2e suites do and grows one cluster through BENCH_SIZES (default
// 1000,5000,10000 Deployments, 20 to an opted-in namespace, created through the webhook, which
// stamps them). The first size's Deployments have BENCH_REPLICAS pods each (default 2, on a fake
// kwok node of the bench's own); the rest have none. At each size a fresh controller (run with
// --inspect, so the bench can force a full garbage collection) is timed to its first steady
// state; then its memory, its writes over a quiet window, what one owner's status change costs
// (its assessment, and any wave step it causes), its CPU time per 1,000 status changes, and a wave (a new configuration): the
// first restart, every owner stamped, and memory after it. The first size runs three waves, to
// show what the heap keeps from one wave to the next.

import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PatchStrategy, setHeaderOptions, Watch, type V1Deployment } from '@kubernetes/client-node';
import {
  CONFIG_REVISION,
  RESTARTED_REVISION,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import { shippedEnv } from '@outrigger/testkit';
import {
  connect,
  cpuSeconds,
  done,
  freePort,
  metricSamples,
  metricSum,
  pending,
  stopAllProcesses,
  TestInstall,
  waitFor,
  type Cluster,
  type ControllerProcess,
} from '../src';
import globalSetup from '../src/global-setup';
import globalTeardown from '../src/global-teardown';
import { BENCH_NODE, benchNode, grow, pool, settle, type Fleet } from './bench-fleet';
import { ONE_OWNER_EVENTS, QUIET_MS, table, type SizeResult, type Wave } from './controller-report';
import { listBaselines } from './list-baseline';
import {
  collectGarbage,
  memoryOf,
  firstLoggedAt,
  loggedDurations,
  sampleRss,
  writeHeapSnapshot,
  type Memory,
} from './process-probes';

const SIZES = (process.env.BENCH_SIZES ?? '1000,5000,10000')
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const REPLICAS = Number(process.env.BENCH_REPLICAS ?? 2);
const MAX_CONCURRENT = Number(process.env.BENCH_MAX_CONCURRENT ?? 200);
const WRITE_QPS = Number(process.env.BENCH_WRITE_QPS ?? 200);
// BENCH_NODE_OPTIONS: the controller's NODE_OPTIONS in place of the chart's (to try V8 settings).
const NODE_OPTIONS = process.env.BENCH_NODE_OPTIONS;
// BENCH_HEAP_SNAPSHOTS: a folder for a V8 heap snapshot of the controller after each wave (after
// its figures are taken), to compare what the heap keeps from one wave to the next.
const SNAPSHOTS = process.env.BENCH_HEAP_SNAPSHOTS
  ? resolve(process.env.BENCH_HEAP_SNAPSHOTS)
  : undefined;
if (SNAPSHOTS) mkdirSync(SNAPSHOTS, { recursive: true });
// BENCH_WAVES: waves in a row at the first size (default 3), to tell a slow leak from noise.
const FIRST_SIZE_WAVES = Number(process.env.BENCH_WAVES ?? 3);
if (!Number.isInteger(FIRST_SIZE_WAVES) || FIRST_SIZE_WAVES < 1)
  throw new Error(
    `BENCH_WAVES must be a whole number of 1 or more; got ${process.env.BENCH_WAVES}`,
  );
const STATUS_EVENTS = 1000;
const PREFIX = 'outrigger_controller';

/** This run, in the status changes it makes. */
const RUN = Date.now().toString(36);

const configYaml = (step: number): string =>
  `proxy:\n  env:\n    - name: BENCH_STEP\n      value: "${step}"\nrollout:\n  maxConcurrent: ${MAX_CONCURRENT}\n  canary:\n    count: 0\n`;

/** Every owner assessed as current, the queue empty. */
async function steady(port: number, size: number, what: string): Promise<void> {
  await waitFor(
    what,
    async () => {
      const current = (await metricSamples(port, `${PREFIX}_owners`)).get('{state="current"}');
      const depth = await metricSum(port, `${PREFIX}_queue_depth`);
      return (current ?? 0) >= size && depth === 0 ? done(undefined) : pending({ current, depth });
    },
    { timeoutMs: 60 * 60_000, intervalMs: 50 },
  );
}

/**
 * The controller's own word that the wave is over: its stage is complete and nothing is queued
 * or running, so the pod watch has narrowed again (it lists every injected pod while the gate
 * judges a wave). Memory measured before that would count a wave's working set as kept.
 */
async function waveOver(port: number): Promise<void> {
  await waitFor(
    'the controller to record the wave complete and go idle',
    async () => {
      const stage = await metricSamples(port, `${PREFIX}_wave_stage`);
      const busy =
        (await metricSum(port, `${PREFIX}_queue_depth`)) +
        (await metricSum(port, `${PREFIX}_reconciles_running`));
      const complete = stage.get('{stage="complete"}') === 1;
      return complete && busy === 0 ? done(undefined) : pending({ complete, busy });
    },
    { timeoutMs: 10 * 60_000, intervalMs: 100 },
  );
}

const deploymentEvents = async (port: number): Promise<number> =>
  (await metricSamples(port, `${PREFIX}_watch_events_total`)).get('{resource="deployments"}') ?? 0;

/** A status-only change of one Deployment: a condition of the bench's own, merged by type. */
async function statusEvent(
  cluster: Cluster,
  target: { namespace: string; name: string },
  tag: string,
) {
  await cluster.apps.patchNamespacedDeploymentStatus(
    {
      ...target,
      // A value no earlier change wrote (sizes share Deployments, so `tag` names the size too):
      // writing the value already there is no event, and the bench would wait for it.
      body: {
        status: {
          conditions: [{ type: 'BenchProbe', status: 'True', reason: `R${RUN}N${tag}` }],
        },
      },
    },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
}

/** Waits until the controller has seen `count` more Deployment events and is idle again. */
async function seen(port: number, from: number, count: number): Promise<void> {
  await waitFor(
    `the controller to see ${count} Deployment events`,
    async () => {
      const events = (await deploymentEvents(port)) - from;
      const depth = await metricSum(port, `${PREFIX}_queue_depth`);
      return events >= count && depth === 0 ? done(undefined) : pending({ events, depth });
    },
    { timeoutMs: 10 * 60_000, intervalMs: 50 },
  );
}

const templateRevision = (deployment: V1Deployment): string | undefined =>
  deployment.spec?.template.metadata?.annotations?.[CONFIG_REVISION];

/** A new configuration: the first restart and the last stamp, from a watch on the Deployments. */
async function wave(
  install: TestInstall,
  running: Running,
  fleet: Fleet,
  step: number,
): Promise<Wave> {
  const next = configYaml(step);
  const revision = makeSnapshot(mustParseConfig(next)).revision;
  const namespaces = new Set(fleet.namespaces);
  const stamped = new Set<string>();
  let firstAt: number | undefined;
  let allAt: number | undefined;
  const watch = await new Watch(install.cluster.kubeConfig).watch(
    '/apis/apps/v1/deployments',
    {},
    (_type: string, d: V1Deployment) => {
      const meta = d.metadata ?? {};
      if (!namespaces.has(meta.namespace ?? '')) return;
      if (meta.annotations?.[RESTARTED_REVISION] === revision) firstAt ??= performance.now();
      if (templateRevision(d) !== revision) return;
      stamped.add(`${meta.namespace}/${meta.name}`);
      if (stamped.size >= fleet.names.length) allAt ??= performance.now();
    },
    () => undefined,
  );
  const logFrom = running.process.process.outputSize();
  const peak = sampleRss(running.process.process.pid);
  const changed = performance.now();
  const changedAt = Date.now();
  await install.setConfig(next);
  // The watch times the stamps; a list every 5 s makes sure a watch that dropped events (the
  // client's watch ends quietly) cannot hang the bench: then the last stamp is timed by the list.
  let listedAt = performance.now();
  await waitFor(
    `every Deployment stamped with revision ${revision}`,
    async () => {
      if (allAt === undefined && performance.now() - listedAt > 5000) {
        listedAt = performance.now();
        const { items } = await install.cluster.apps.listDeploymentForAllNamespaces();
        const mine = items.filter((d) => namespaces.has(d.metadata?.namespace ?? ''));
        if (mine.every((d) => templateRevision(d) === revision)) allAt ??= performance.now();
      }
      return allAt !== undefined ? done(undefined) : pending(stamped.size);
    },
    { timeoutMs: 60 * 60_000, intervalMs: 200 },
  );
  watch.abort();
  // The wave is over when every owner is current again (its rollouts done, nothing queued).
  await steady(running.port, fleet.names.length, 'the wave to complete');
  await waveOver(running.port);
  const after = await running.memory();
  const peakRss = peak();
  await collectGarbage(running.inspectPort);
  const log = running.process.process.output(logFrom);
  // The client's watch ends quietly at times (the list above backs only the stamps): then the
  // controller's own log times the first restart, by the wall clock both share.
  const firstLogged = firstLoggedAt(log, 'restarted');
  return {
    firstMs:
      firstAt !== undefined
        ? firstAt - changed
        : firstLogged !== undefined
          ? firstLogged - changedAt
          : Number.NaN,
    allMs: (allAt ?? changed) - changed,
    steps: loggedDurations(log, 'reconciled', 'Wave'),
    peakRss,
    after,
    afterGc: await running.memory(),
  };
}

interface Running {
  process: ControllerProcess;
  port: number;
  inspectPort: number;
  memory: () => Promise<Memory>;
}

/** The environment the chart gives the controller, with BENCH_NODE_OPTIONS if set. */
function controllerEnv(): Record<string, string> {
  const env = shippedEnv('controller');
  return NODE_OPTIONS === undefined ? env : { ...env, NODE_OPTIONS };
}

async function startController(install: TestInstall, size: number): Promise<Running> {
  const inspectPort = await freePort();
  const controller = await install.startController(
    `bench-controller-${size}`,
    ['--write-qps', String(WRITE_QPS), '--write-burst', String(WRITE_QPS * 2)],
    [`--inspect=127.0.0.1:${inspectPort}`],
    controllerEnv(),
  );
  const port = controller.metricsPort;
  const pid = controller.process.pid;
  return { process: controller, port, inspectPort, memory: () => memoryOf(pid, port, PREFIX) };
}

/** One size: a fresh controller, its steady state, one owner's events, status churn, waves. */
async function measure(install: TestInstall, fleet: Fleet, size: number, step: { n: number }) {
  const created = performance.now();
  await grow(install, fleet, size, REPLICAS);
  const createMs = performance.now() - created;
  const settleMs = await settle(install.cluster);
  const revision = makeSnapshot(mustParseConfig(configYaml(step.n))).revision;
  const lists = await listBaselines(install.cluster, revision);
  const started = performance.now();
  const c = await startController(install, size);
  await steady(c.port, size, 'the controller to assess every owner with an empty queue');
  const steadyMs = performance.now() - started;
  const steadyMemory = await c.memory();
  await collectGarbage(c.inspectPort);
  const steadyGc = await c.memory();
  const writes = await metricSum(c.port, `${PREFIX}_writes_total`);
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  const quietWrites = (await metricSum(c.port, `${PREFIX}_writes_total`)) - writes;
  // One owner's status change at a time, each seen and reconciled before the next.
  const logFrom = c.process.process.outputSize();
  for (let i = 0; i < ONE_OWNER_EVENTS; i++) {
    const from = await deploymentEvents(c.port);
    await statusEvent(
      install.cluster,
      fleet.names[(i * 7919) % size] ?? { namespace: '', name: '' },
      `${size}-${i}`,
    );
    await seen(c.port, from, 1);
  }
  const oneOwnerLog = c.process.process.output(logFrom);
  const assessed = loggedDurations(oneOwnerLog, 'owners assessed');
  const steps = loggedDurations(oneOwnerLog, 'reconciled', 'Wave');
  // Churn: status changes across the fleet, as fast as 10 writers make them.
  const events = await deploymentEvents(c.port);
  const cpu = cpuSeconds(c.process.process.pid);
  await pool([...Array(STATUS_EVENTS).keys()], 10, (i) =>
    statusEvent(
      install.cluster,
      fleet.names[(i * 104729) % size] ?? { namespace: '', name: '' },
      `${size}-churn-${i}`,
    ),
  );
  await seen(c.port, events, STATUS_EVENTS);
  const cpuPer1000 =
    ((cpuSeconds(c.process.process.pid) - cpu) * 1000) /
    ((await deploymentEvents(c.port)) - events);
  const waves: Wave[] = [];
  const count = step.n === 0 ? FIRST_SIZE_WAVES : 1;
  for (let i = 0; i < count; i++) {
    waves.push(await wave(install, c, fleet, ++step.n));
    if (SNAPSHOTS)
      await writeHeapSnapshot(
        c.inspectPort,
        join(SNAPSHOTS, `controller-${size}-wave-${i + 1}.heapsnapshot`),
      );
  }
  await c.process.process.stop();
  const result: SizeResult = {
    size,
    pods: podsOf(fleet),
    createMs,
    settleMs,
    lists,
    steadyMs,
    steady: steadyMemory,
    steadyGc,
    quietWrites,
    assessed,
    steps,
    cpuPer1000,
    waves,
  };
  return result;
}

const podsOf = (fleet: Fleet): number => Math.min(fleet.names.length, SIZES[0] ?? 0) * REPLICAS;

async function run(): Promise<void> {
  const cluster = connect();
  const install = new TestInstall(cluster, { configYaml: configYaml(0) });
  const results: SizeResult[] = [];
  try {
    await install.setup();
    await benchNode(cluster);
    const fleet: Fleet = { namespaces: [], names: [] };
    const step = { n: 0 };
    for (const size of SIZES) {
      results.push(await measure(install, fleet, size, step));
      process.stdout.write(`\n${table(results)}\n`);
    }
    process.stdout.write(
      `\nbench-controller: sizes ${SIZES.join(', ')}, the first with ${REPLICAS} pods per Deployment; maxConcurrent ${MAX_CONCURRENT}, write limit ${WRITE_QPS}/s; Node.js ${process.version}; controller environment ${JSON.stringify(controllerEnv())}\n${table(results)}\n`,
    );
  } finally {
    await install.teardown();
    await cluster.core.deleteNode({ name: BENCH_NODE }).catch(() => undefined);
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
