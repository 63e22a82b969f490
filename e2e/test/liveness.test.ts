// The controller never busy-loops, against a real API server: with one slot
// (`maxConcurrent: 1`) held by an owner that rolls slowly (minReadySeconds 25), neither an owner
// whose restart a policy refuses nor every write failing for a while (then recovering) may make
// the leader spin. A spinning leader stops answering its probes and stops reading its watches,
// so each scenario probes /healthz every 100 ms throughout and waits for the controller to
// record the slow owner's completion, which it can only do while it reads its watches and writes.

import type { V1Deployment } from '@kubernetes/client-node';
import {
  COMPLETED_REVISION,
  INJECTION_LABEL,
  ENABLED,
  RESTARTED_REVISION,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import {
  apply,
  connect,
  deploymentYaml,
  done,
  dumpingOnFailure,
  failed,
  failingWebhook,
  metricSamples,
  metricSum,
  pending,
  probe,
  refusingPolicy,
  remove,
  TestInstall,
  waitFor,
  waitForDryRun,
  type Cluster,
  type ControllerProcess,
  useTestInstall,
} from '../src';

/** One slot, a deadline far beyond the test, no canary stage: only a spin could stop the wave. */
const configYaml = (step: number): string =>
  `proxy: {env: [{name: E2E_STEP, value: "${step}"}]}\n` +
  'rollout: {maxConcurrent: 1, progressDeadlineSeconds: 300, canary: {count: 0}}\n';
const revisionOf = (yaml: string): string => makeSnapshot(mustParseConfig(yaml)).revision;

/** Rolls for 25 s after its restart: its new pod counts as available only then. */
const SLOW = { minReadySeconds: 25 };

const cluster: Cluster = connect();
const install = new TestInstall(cluster, { configYaml: configYaml(0) });
let controller: ControllerProcess;
let step = 0;

useTestInstall(install, {
  build: ['webhook', 'controller'],
  then: async () => {
    controller = await install.startController('outrigger-controller-liveness');
  },
});

/**
 * GETs the controller's /healthz every 100 ms, one at a time, and keeps the slowest answer and
 * every probe that got none within 2 s (the kubelet's default probe timeout is 1 s).
 */
class HealthProbes {
  count = 0;
  slowestMs = 0;
  readonly unanswered: string[] = [];
  private running = true;
  private loop: Promise<void> = Promise.resolve();

  constructor(private readonly port: number) {}

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = performance.now();
      try {
        const { status } = await probe(`http://127.0.0.1:${this.port}/healthz`);
        if (status !== 200) this.unanswered.push(`${new Date().toISOString()} HTTP ${status}`);
      } catch (error) {
        this.unanswered.push(`${new Date().toISOString()} ${String(error)}`);
      }
      this.slowestMs = Math.max(this.slowestMs, performance.now() - started);
      this.count += 1;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Why the controller counts as unresponsive so far, or undefined. */
  get problem(): string | undefined {
    if (this.unanswered.length > 0) return `unanswered probes: ${this.unanswered.join('; ')}`;
    if (this.slowestMs >= 1000) return `a probe took ${Math.round(this.slowestMs)} ms`;
    return undefined;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}

async function deployment(namespace: string, name: string): Promise<V1Deployment> {
  return cluster.apps.readNamespacedDeployment({ namespace, name });
}

const restartedTo = (d: V1Deployment): string | undefined =>
  d.metadata?.annotations?.[RESTARTED_REVISION];
const completedAt = (d: V1Deployment): string | undefined =>
  d.metadata?.labels?.[COMPLETED_REVISION];

/**
 * Waits until `check` holds, failing at once if the controller stopped answering its probes: a
 * hang shows as that, rather than as a timeout much later.
 */
function whileResponsive<T>(
  probes: HealthProbes,
  description: string,
  check: () => Promise<T | undefined>,
): Promise<T> {
  return waitFor(
    description,
    async () => {
      const problem = probes.problem;
      if (problem) return failed(`the controller stopped answering: ${problem}`);
      const value = await check();
      return value === undefined ? pending('not yet') : done(value);
    },
    { timeoutMs: 120_000 },
  );
}

/** The RestartFailed Events on one owner. */
async function restartFailures(namespace: string, name: string): Promise<string[]> {
  const { items } = await cluster.core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.name=${name},reason=RestartFailed`,
  });
  return items.map((e) => e.message ?? '');
}

/** Wave steps the controller has run so far. */
async function waveSteps(): Promise<number> {
  const samples = await metricSamples(
    controller.metricsPort,
    'outrigger_controller_reconciles_total',
  );
  return [...samples]
    .filter(([labels]) => labels.includes('kind="Wave"'))
    .reduce((sum, [, value]) => sum + value, 0);
}

/**
 * A namespace opted in and labelled, with one Deployment per name (those in `slow` roll slowly),
 * each rolled out with the sidecar at the current revision.
 */
async function ownersIn(prefix: string, names: string[], slow: string[]): Promise<string> {
  const ns = await install.newNamespace(prefix, { optedIn: true });
  await waitFor(`the controller to label ${ns}`, async () => {
    const n = await cluster.core.readNamespace({ name: ns });
    return n.metadata?.labels?.[INJECTION_LABEL] === ENABLED ? done(undefined) : pending(n);
  });
  const yaml = names.map((n) => deploymentYaml(n, { spec: slow.includes(n) ? SLOW : {} }));
  await apply(cluster, yaml.join('---\n'), { namespace: ns });
  await waitFor('every owner rolled out, and current', async () => {
    const { items } = await cluster.apps.listNamespacedDeployment({ namespace: ns });
    const ready = items.filter((d) => (d.status?.availableReplicas ?? 0) >= 1);
    return ready.length === names.length ? done(undefined) : pending(ready.length);
  });
  return ns;
}

/** Changes the configuration; returns the new revision. */
async function newRevision(): Promise<string> {
  step += 1;
  const yaml = configYaml(step);
  await install.setConfig(yaml);
  return revisionOf(yaml);
}

/**
 * Follows the slow owner from its restart to the completion the controller records, with the
 * wave's steps counted meanwhile: watch events and timers only, never back to back.
 */
async function followSlowRollout(
  probes: HealthProbes,
  ns: string,
  name: string,
  revision: string,
): Promise<void> {
  await whileResponsive(probes, `${name} restarted`, async () =>
    restartedTo(await deployment(ns, name)) === revision ? true : undefined,
  );
  const stepsAtRestart = await waveSteps();
  const restartedAt = Date.now();
  // The other owners wait for the slot meanwhile; then the controller must still see the
  // rollout complete (its watch) and record it (a write).
  await whileResponsive(probes, `the controller to record ${name} complete`, async () =>
    completedAt(await deployment(ns, name)) === revision ? true : undefined,
  );
  const rolledMs = Date.now() - restartedAt;
  const steps = (await waveSteps()) - stepsAtRestart;
  expect(rolledMs).toBeGreaterThanOrEqual(20_000);
  // A step per watch event or timer that matters: 2 or 3 here. A step every second would be 25.
  expect(steps).toBeLessThanOrEqual(15);
}

/** The controller answered every probe, promptly, all along. */
function expectAnswered(probes: HealthProbes): void {
  expect(probes.count).toBeGreaterThan(100);
  expect(probes.unanswered).toEqual([]);
  expect(probes.slowestMs).toBeLessThan(1000);
}

describe('outrigger-controller with one slot and an owner it cannot restart', () => {
  it('a refused owner waiting on a full budget: the leader answers /healthz throughout, and the wave goes on', async () => {
    const ns = await ownersIn('live-refused', ['a-refused', 'b-slow'], ['b-slow']);
    // Refuses the controller's writes to a-refused, which sorts first, as a Kyverno or
    // Gatekeeper rule might.
    const refusal = 'refused by the liveness policy';
    const policy = refusingPolicy({
      name: `outrigger-e2e-live-${install.run}`,
      namespace: ns,
      deployment: 'a-refused',
      accountsOf: install.system,
      message: refusal,
    });
    const probes = new HealthProbes(controller.metricsPort);
    try {
      await dumpingOnFailure(cluster, [ns, install.system], async () => {
        await apply(cluster, policy);
        await waitForDryRun(cluster, { namespace: ns, name: 'a-refused', refusal });
        probes.start();
        const revision = await newRevision();

        // The refusal, then b-slow takes the one slot.
        await whileResponsive(probes, 'a RestartFailed Event on a-refused', async () => {
          const messages = await restartFailures(ns, 'a-refused');
          return messages.find((m) => m.includes(refusal));
        });
        await followSlowRollout(probes, ns, 'b-slow', revision);

        // Once the policy is gone, a-refused's back-off runs out and it is restarted too.
        await remove(cluster, policy);
        await whileResponsive(probes, 'a-refused restarted', async () =>
          restartedTo(await deployment(ns, 'a-refused')) === revision ? true : undefined,
        );
        await probes.stop();
        expectAnswered(probes);
      });
    } finally {
      await probes.stop();
      await remove(cluster, policy);
    }
  }, 240_000);

  it('every write failing mid-wave (HTTP 500), then the API server recovering: no owner is held as refused, and no probe goes unanswered', async () => {
    const ns = await ownersIn('live-outage', ['a-slow', 'b', 'c'], ['a-slow']);
    const webhook = failingWebhook({ name: `outrigger-e2e-outage-${install.run}`, namespace: ns });
    const failure = 'failed calling webhook';
    const probes = new HealthProbes(controller.metricsPort);
    const patches = () =>
      metricSamples(controller.metricsPort, 'outrigger_controller_writes_total').then(
        (s) => s.get('{resource="deployments",verb="patch"}') ?? 0,
      );
    const refusedBefore = await metricSum(
      controller.metricsPort,
      'outrigger_controller_write_failures_total',
    );
    try {
      await dumpingOnFailure(cluster, [ns, install.system], async () => {
        await apply(cluster, webhook);
        await waitForDryRun(cluster, { namespace: ns, name: 'a-slow', refusal: failure });
        probes.start();
        const patchesBefore = await patches();
        const revision = await newRevision();

        // The wave tries, and the API server fails its writes, a few times.
        await whileResponsive(probes, 'the controller to try three restarts', async () =>
          (await patches()) - patchesBefore >= 3 ? true : undefined,
        );
        await remove(cluster, webhook);
        await waitForDryRun(cluster, { namespace: ns, name: 'a-slow', refusal: undefined });

        // Back: a-slow takes the one slot; b and c wait for it, then go one after the other.
        await followSlowRollout(probes, ns, 'a-slow', revision);
        for (const name of ['b', 'c'])
          await whileResponsive(probes, `the controller to record ${name} complete`, async () =>
            completedAt(await deployment(ns, name)) === revision ? true : undefined,
          );
        await probes.stop();
        expectAnswered(probes);
        // The failures were the server's, not the owners': no Event, no back-off, none counted.
        for (const name of ['a-slow', 'b', 'c'])
          expect(await restartFailures(ns, name)).toEqual([]);
        expect(
          await metricSum(controller.metricsPort, 'outrigger_controller_write_failures_total'),
        ).toBe(refusedBefore);
      });
    } finally {
      await probes.stop();
      await remove(cluster, webhook);
    }
  }, 240_000);
});
