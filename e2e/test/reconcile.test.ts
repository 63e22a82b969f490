// The reconciler behind a real API server: the webhook and the
// controller run as their own ServiceAccounts with the RBAC of manifests/install.yaml, and the
// webhook configuration fails open. The tests run in order and share one controller: each
// changes the configuration, so each leaves its namespaces deleted (or every owner current)
// for the next one. Every assertion is about this file's namespaces.

import {
  Watch,
  type KubernetesObject,
  type V1Deployment,
  type V1Pod,
  type V1ReplicaSet,
} from '@kubernetes/client-node';
import {
  COMPLETED_REVISION,
  CONFIG_MAP_NAME,
  ENABLED,
  HEALED_REVISION,
  INJECT,
  INJECTION_LABEL,
  OWNER_KIND,
  RESTARTED_REVISION,
  RESUME,
  RESUMED_AT,
  REVISION,
  SKIPPED,
  STAMPED,
  WAVE_STOPPED,
  makeSnapshot,
  mustParseConfig,
  readStamp,
  type KubeObject,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  buildWorkspace,
  connect,
  controllerCaughtUp,
  deleteNamespace,
  deploymentYaml,
  deploymentRolloutStatus,
  done,
  dumpingOnFailure,
  metricSamples,
  metricSum,
  nudgeDeployment,
  pending,
  refusingPolicy,
  remove,
  stopAllProcesses,
  TestInstall,
  threeKindsYaml,
  waitFor,
  waitForDryRun,
  waitForRollout,
  waveStepFinished,
  type Cluster,
  type ControllerProcess,
} from '../src';

const PROXY = 'outrigger-proxy';
const DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';

/**
 * The configuration of each step; the env variable changes the revision, nothing else. No
 * canary stage and no rollback: these tests are about the budget, the records, and a stop an
 * admin resumes past (e2e/test/progressive.test.ts is about the stages and the rollback).
 */
function configYaml(step: number, maxConcurrent = 3, mode = 'auto'): string {
  return [
    'proxy:',
    '  env:',
    '    - name: E2E_STEP',
    `      value: "${step}"`,
    'rollout:',
    `  maxConcurrent: ${maxConcurrent}`,
    `  mode: ${mode}`,
    '  canary: {count: 0}',
    '  onFailure: stop',
    '  progressDeadlineSeconds: 120',
    '  healBackoffSeconds: 5',
    '',
  ].join('\n');
}
const revisionOf = (yaml: string): string => makeSnapshot(mustParseConfig(yaml)).revision;

const cluster: Cluster = connect();
const install = new TestInstall(cluster, { configYaml: configYaml(0) });
let controller: ControllerProcess;

beforeAll(async () => {
  await Promise.all([buildWorkspace('webhook'), buildWorkspace('controller')]);
  await install.setup();
  controller = await install.startController('outrigger-controller-a');
}, 120_000);

afterAll(async () => {
  await install.teardown();
  await stopAllProcesses();
  await cluster.close();
}, 60_000);

/**
 * Runs a scenario; on failure dumps its namespaces. Either way they are deleted afterwards, so
 * the next scenario's wave does not include them.
 */
async function scenario(namespaces: string[], body: () => Promise<void>): Promise<void> {
  try {
    await dumpingOnFailure(cluster, [...namespaces, install.system], body);
  } finally {
    await Promise.all(namespaces.map((ns) => deleteNamespace(cluster, ns, { wait: true })));
  }
}

// ---- objects ---------------------------------------------------------------------------------

const deployment = (name: string, replicas = 1, spec: Record<string, unknown> = {}): string =>
  deploymentYaml(name, { replicas, spec });

const threeKinds = threeKindsYaml(2);

// ---- what the cluster looks like -------------------------------------------------------------

async function livePods(namespace: string): Promise<V1Pod[]> {
  const { items } = await cluster.core.listNamespacedPod({ namespace });
  return items.filter((p) => !p.metadata?.deletionTimestamp);
}

const isInjected = (pod: V1Pod, revision: string): boolean =>
  pod.metadata?.labels?.[REVISION] === revision &&
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some(
    (c) => c.name === PROXY,
  );

/** Waits until every live pod in the namespaces runs the sidecar at `revision` (and there are `count`). */
async function waitForPodsAt(
  namespaces: string[],
  revision: string,
  count: number,
): Promise<V1Pod[]> {
  return waitFor(
    `${count} pods in ${namespaces.join(', ')} injected at revision ${revision}`,
    async () => {
      const pods = (await Promise.all(namespaces.map(livePods))).flat();
      const behind = pods.filter((p) => !isInjected(p, revision));
      return pods.length === count && behind.length === 0
        ? done(pods)
        : pending({
            pods: pods.length,
            behind: behind.map(
              (p) => `${p.metadata?.name}: ${p.metadata?.labels?.[REVISION] ?? 'none'}`,
            ),
          });
    },
    { timeoutMs: 120_000 },
  );
}

async function replicaSetsOf(namespace: string, name: string): Promise<V1ReplicaSet[]> {
  const { items } = await cluster.apps.listNamespacedReplicaSet({
    namespace,
    labelSelector: `app=${name}`,
  });
  return items;
}

async function deployments(namespace: string): Promise<V1Deployment[]> {
  return (await cluster.apps.listNamespacedDeployment({ namespace })).items;
}

const annotation = (o: KubernetesObject, key: string): string | undefined =>
  o.metadata?.annotations?.[key];

/** Waits until every Deployment in the namespaces was restarted to `revision` and completed. */
async function waitForRestarted(namespaces: string[], revision: string, count: number) {
  return waitFor(
    `${count} Deployments restarted to ${revision} and complete`,
    async () => {
      const all = (await Promise.all(namespaces.map(deployments))).flat();
      const behind = all.filter(
        (d) =>
          annotation(d, RESTARTED_REVISION) !== revision ||
          d.metadata?.labels?.[COMPLETED_REVISION] !== revision ||
          deploymentRolloutStatus(d).outcome !== 'done',
      );
      return all.length === count && behind.length === 0
        ? done(all)
        : pending(behind.map((d) => `${d.metadata?.name}: ${annotation(d, RESTARTED_REVISION)}`));
    },
    { timeoutMs: 180_000 },
  );
}

async function eventsFor(namespace: string, name: string, reason: string) {
  const { items } = await cluster.core.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.name=${name},reason=${reason}`,
  });
  return items;
}

async function configMapAnnotations(): Promise<Record<string, string>> {
  const cm = await cluster.core.readNamespacedConfigMap({
    namespace: install.system,
    name: CONFIG_MAP_NAME,
  });
  return cm.metadata?.annotations ?? {};
}

/** Opts a namespace in as an admin does, and waits for the controller's label. */
async function optIn(namespace: string): Promise<void> {
  await cluster.core.patchNamespace(
    { name: namespace, body: { metadata: { annotations: { [INJECT]: ENABLED } } } },
    MERGE_PATCH,
  );
  await optInLabelled(namespace);
}

/**
 * Records, from a watch, how many of the Deployments in `namespaces` were rolling at once:
 * each event updates one Deployment's state, in the order the API server sent them.
 */
class RollingTimeline {
  private readonly rolling = new Set<string>();
  private abort: AbortController | undefined;
  private stopped = false;
  /** Set when the watch ended before stop(): the timeline is incomplete. */
  ended: string | undefined;
  maxRolling = 0;
  readonly starts: string[] = [];
  /** Every change of a Deployment between rolling and not, in order: shown when a check fails. */
  readonly transitions: string[] = [];
  private atMax: string[] = [];

  /** The transitions up to the moment the most were rolling. */
  get timelineToMax(): string {
    return this.atMax.join('\n');
  }

  constructor(private readonly namespaces: ReadonlySet<string>) {}

  async start(): Promise<void> {
    const watch = new Watch(cluster.kubeConfig);
    this.abort = await watch.watch(
      '/apis/apps/v1/deployments',
      {},
      (_type: string, d: V1Deployment) => this.observe(d),
      (err: unknown) => {
        // A watch that ends before stop() would leave the check blind from then on.
        if (!this.stopped) this.ended = `the timeline's watch ended early: ${String(err)}`;
      },
    );
  }

  private observe(d: V1Deployment): void {
    const ns = d.metadata?.namespace ?? '';
    if (!this.namespaces.has(ns)) return;
    const key = `${ns}/${d.metadata?.name}`;
    const status = deploymentRolloutStatus(d);
    const rolling = status.outcome !== 'done';
    if (rolling && !this.rolling.has(key)) this.starts.push(key);
    if (rolling !== this.rolling.has(key))
      this.transitions.push(
        `${rolling ? 'start' : 'end  '} ${key} rv=${d.metadata?.resourceVersion} ${status.message}`,
      );
    if (rolling) this.rolling.add(key);
    else this.rolling.delete(key);
    if (this.rolling.size > this.maxRolling) this.atMax = [...this.transitions];
    this.maxRolling = Math.max(this.maxRolling, this.rolling.size);
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}

// ---- the scenarios ---------------------------------------------------------------------------

describe('outrigger-controller with the webhook', () => {
  let revision = revisionOf(configYaml(0));

  it('opting a namespace in restarts its Deployment, StatefulSet and DaemonSet onto the sidecar', async () => {
    const ns = await install.newNamespace('r1-existing');
    await scenario([ns], async () => {
      await apply(cluster, threeKinds, { namespace: ns });
      const [ds] = await Promise.all([
        waitForRollout(cluster, { kind: 'DaemonSet', namespace: ns, name: 'agent' }),
        waitForRollout(cluster, { kind: 'StatefulSet', namespace: ns, name: 'db' }),
        waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'web' }),
      ]);
      const total = 2 + 2 + (ds.status?.desiredNumberScheduled ?? 0);
      expect((await livePods(ns)).filter((p) => p.metadata?.labels?.[REVISION])).toEqual([]);

      await optIn(ns);
      const pods = await waitForPodsAt([ns], revision, total);
      for (const pod of pods) expect(pod.metadata?.labels?.[OWNER_KIND]).toBeDefined();
      for (const [kind, name] of [
        ['Deployment', 'web'],
        ['StatefulSet', 'db'],
        ['DaemonSet', 'agent'],
      ] as const) {
        const w = await waitForRollout(cluster, { kind, namespace: ns, name });
        expect(readStamp(JSON.parse(JSON.stringify(w)) as KubeObject)).toMatchObject({
          ownerKind: kind,
          ownerName: name,
          revision,
        });
        expect(annotation(w, RESTARTED_REVISION)).toBe(revision);
        expect(await eventsFor(ns, name, 'Restarted')).toHaveLength(1);
      }
      // Restarted once: the original ReplicaSet and the one of the restart.
      expect(await replicaSetsOf(ns, 'web')).toHaveLength(2);
    });
  });

  it('a new Deployment in an opted-in namespace ends with exactly one ReplicaSet', async () => {
    const ns = await install.newNamespace('r2-new', { optedIn: true });
    await scenario([ns], async () => {
      await optInLabelled(ns);
      await apply(cluster, deployment('fresh', 2), { namespace: ns });
      await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'fresh' });
      await waitForPodsAt([ns], revision, 2);
      // The controller has seen the Deployment (it counts it as current) and had time to act,
      // were it going to.
      await waitFor('the controller to count the Deployment as current', async () => {
        const states = await metricSamples(controller.metricsPort, 'outrigger_controller_owners');
        return (states.get('{state="current"}') ?? 0) >= 1 ? done(undefined) : pending(states);
      });
      await controllerCaughtUp(
        controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, ns, 'fresh'),
      );
      const [d] = await deployments(ns);
      expect(d && annotation(d, RESTARTED_REVISION)).toBeUndefined();
      expect(await replicaSetsOf(ns, 'fresh')).toHaveLength(1);
    });
  });

  it('a configuration change rolls 24 owners in 4 namespaces, never more than maxConcurrent at once', async () => {
    const namespaces = await Promise.all(
      [1, 2, 3, 4].map((i) => install.newNamespace(`r3-wave${i}`, { optedIn: true })),
    );
    await scenario(namespaces, async () => {
      for (const ns of namespaces) await optInLabelled(ns);
      const names = ['a', 'b', 'c', 'd', 'e', 'f'];
      for (const ns of namespaces)
        await apply(cluster, names.map((n) => deployment(n)).join('---\n'), { namespace: ns });
      await waitForPodsAt(namespaces, revision, 24);
      // Settled first: the watch starts with every Deployment as it is now.
      for (const ns of namespaces)
        for (const n of names)
          await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: n });

      const timeline = new RollingTimeline(new Set(namespaces));
      await timeline.start();
      const yaml = configYaml(1, 3);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      await waitForRestarted(namespaces, revision, 24);
      await waitForPodsAt(namespaces, revision, 24);
      timeline.stop();

      expect(timeline.ended).toBeUndefined();
      expect(new Set(timeline.starts).size).toBe(24);
      // The budget is used (the first step starts three) and never exceeded; on failure the
      // message shows every transition up to the moment the most were rolling.
      expect(`${timeline.maxRolling} rolling at once at most:\n${timeline.timelineToMax}`).toMatch(
        /^3 rolling at once at most/,
      );
      for (const ns of namespaces)
        for (const n of names) expect(await replicaSetsOf(ns, n)).toHaveLength(2);
    });
  }, 300_000);

  it('a rollout that cannot complete stops the wave until an admin resumes it', async () => {
    // Sorted first (the wave goes by namespace, kind, name), and its new pods are refused by
    // a quota, so its rollout passes the Deployment's progress deadline.
    const stuckNs = await install.newNamespace('r4a-stuck', { optedIn: true });
    const restNs = await install.newNamespace('r4b-rest', { optedIn: true });
    await scenario([stuckNs, restNs], async () => {
      await optInLabelled(stuckNs);
      await optInLabelled(restNs);
      await apply(
        cluster,
        deployment('stuck', 1, {
          progressDeadlineSeconds: 10,
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
        }),
        { namespace: stuckNs },
      );
      await apply(cluster, ['x', 'y', 'z'].map((n) => deployment(n)).join('---\n'), {
        namespace: restNs,
      });
      await waitForPodsAt([stuckNs, restNs], revision, 4);
      await apply(
        cluster,
        {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'one-pod' },
          spec: { hard: { pods: '1' } },
        } as KubernetesObject,
        { namespace: stuckNs },
      );

      const yaml = configYaml(2, 1);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      const stopped = await waitFor(
        'the wave to stop',
        async () => {
          const a = await configMapAnnotations();
          return a[WAVE_STOPPED]?.startsWith(revision) ? done(a[WAVE_STOPPED]) : pending(a);
        },
        { timeoutMs: 90_000 },
      );
      expect(stopped).toContain(`${stuckNs}/Deployment/stuck`);
      // The Event is recorded after the annotation is written: wait for it, then count it.
      const stalls = await waitFor(
        'the RolloutStalled Event on Deployment stuck',
        async () => {
          const events = await eventsFor(stuckNs, 'stuck', 'RolloutStalled');
          return events.length > 0 ? done(events) : pending('no Event yet');
        },
        { timeoutMs: 15_000 },
      );
      expect(stalls).toHaveLength(1);
      expect(
        await metricSum(controller.metricsPort, 'outrigger_controller_rollout_stalls_total'),
      ).toBeGreaterThanOrEqual(1);
      expect(await metricSum(controller.metricsPort, 'outrigger_controller_wave_stopped')).toBe(1);

      // Nothing else restarts while the wave is stopped: not once the controller has caught up.
      await controllerCaughtUp(
        controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, restNs, 'x'),
      );
      for (const d of await deployments(restNs))
        expect(annotation(d, RESTARTED_REVISION)).toBeUndefined();

      await install.annotateConfig({ [RESUME]: 'now' });
      await waitForRestarted([restNs], revision, 3);
      const after = await configMapAnnotations();
      expect(after[WAVE_STOPPED]).toBeUndefined();
      expect(after[RESUME]).toBeUndefined();
      expect(after[RESUMED_AT]).toBeDefined();
      expect(await metricSum(controller.metricsPort, 'outrigger_controller_wave_stopped')).toBe(0);
    });
  }, 240_000);

  it('an owner whose restart the API server refuses does not hold up the wave', async () => {
    const ns = await install.newNamespace('r45-refused', { optedIn: true });
    // A policy that refuses the controller's writes to one Deployment, as a Kyverno or
    // Gatekeeper rule might; it sorts first, so a wave it could block would stop right there.
    const refusal = 'refused by the e2e policy';
    const policy = refusingPolicy({
      name: `outrigger-e2e-refuse-${install.run}`,
      namespace: ns,
      deployment: 'refused',
      accountsOf: install.system,
      message: refusal,
    });
    try {
      await scenario([ns], async () => {
        await optInLabelled(ns);
        await apply(cluster, ['refused', 'z1', 'z2'].map((n) => deployment(n)).join('---\n'), {
          namespace: ns,
        });
        await waitForPodsAt([ns], revision, 3);
        await apply(cluster, policy);
        await waitForDryRun(cluster, { namespace: ns, name: 'refused', refusal });
        const failuresBefore = await metricSum(
          controller.metricsPort,
          'outrigger_controller_write_failures_total',
        );

        const yaml = configYaml(4, 1);
        revision = revisionOf(yaml);
        await install.setConfig(yaml);
        await waitFor(
          'z1 and z2 restarted one after the other, past the refused owner',
          async () => {
            const ds = await deployments(ns);
            const done2 = ds.filter(
              (d) =>
                d.metadata?.name !== 'refused' &&
                annotation(d, RESTARTED_REVISION) === revision &&
                d.metadata?.labels?.[COMPLETED_REVISION] === revision,
            );
            return done2.length === 2 ? done(undefined) : pending(done2.length);
          },
          { timeoutMs: 90_000 },
        );
        const [refused] = (await deployments(ns)).filter((d) => d.metadata?.name === 'refused');
        expect(refused && annotation(refused, RESTARTED_REVISION)).toBeUndefined();
        const [event] = await eventsFor(ns, 'refused', 'RestartFailed');
        expect(event?.message).toContain('refused by the e2e policy');
        expect(
          await metricSum(controller.metricsPort, 'outrigger_controller_write_failures_total'),
        ).toBeGreaterThan(failuresBefore);

        // Once the policy is gone, the owner's back-off runs out and it is restarted too.
        await remove(cluster, policy);
        await waitForRestarted([ns], revision, 3);
      });
    } finally {
      await remove(cluster, policy);
    }
  }, 180_000);

  it('dry-run and manual restart nothing; auto then rolls the same revision', async () => {
    const ns = await install.newNamespace('r46-modes', { optedIn: true });
    await scenario([ns], async () => {
      await optInLabelled(ns);
      await apply(cluster, deployment('held'), { namespace: ns });
      await waitForPodsAt([ns], revision, 1);
      const logFrom = controller.process.outputSize();

      // The same revision in each mode: the mode is not part of it.
      const dryRun = configYaml(5, 3, 'dry-run');
      revision = revisionOf(dryRun);
      expect(revisionOf(configYaml(5, 3, 'manual'))).toBe(revision);
      await install.setConfig(dryRun);
      await waitFor('the controller to log what it would restart', () =>
        controller.process.output(logFrom).includes(`"owner":"${ns}/Deployment/held"`) &&
        controller.process.output(logFrom).includes('dry-run: would restart')
          ? done(undefined)
          : pending(controller.process.tail(3)),
      );
      expect(await eventsFor(ns, 'held', 'RestartSkipped')).toHaveLength(0);

      await install.setConfig(configYaml(5, 3, 'manual'));
      await waitFor('a RestartSkipped Event in manual mode', async () => {
        const events = await eventsFor(ns, 'held', 'RestartSkipped');
        return events.length === 1 ? done(events) : pending(events.length);
      });
      const [untouched] = await deployments(ns);
      expect(untouched && annotation(untouched, RESTARTED_REVISION)).toBeUndefined();
      expect(await replicaSetsOf(ns, 'held')).toHaveLength(1);

      await install.setConfig(configYaml(5, 3, 'auto'));
      await waitForRestarted([ns], revision, 1);
      await waitForPodsAt([ns], revision, 1);
    });
  }, 120_000);

  it('a controller killed mid-wave is replaced within the lease duration and restarts no owner twice', async () => {
    const ns = await install.newNamespace('r5-handover', { optedIn: true });
    await scenario([ns], async () => {
      await optInLabelled(ns);
      const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      await apply(cluster, names.map((n) => deployment(n, 2)).join('---\n'), { namespace: ns });
      await waitForPodsAt([ns], revision, 16);
      const follower = await install.startController('outrigger-controller-b');
      expect(await metricSum(follower.metricsPort, 'outrigger_controller_leader')).toBe(0);

      const yaml = configYaml(3, 2);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      await waitFor('two owners restarted', async () => {
        const started = (await deployments(ns)).filter(
          (d) => annotation(d, RESTARTED_REVISION) === revision,
        );
        return started.length >= 2 ? done(undefined) : pending(started.length);
      });
      const killedAt = Date.now();
      await controller.process.kill();
      await waitFor(
        'the follower to lead',
        async () =>
          (await metricSum(follower.metricsPort, 'outrigger_controller_leader')) === 1
            ? done(undefined)
            : pending('following'),
        { timeoutMs: 30_000 },
      );
      const handover = Date.now() - killedAt;
      // The Lease lasts 15 s; a follower retries every 2 s.
      expect(handover).toBeLessThanOrEqual(15_000 + 2_000 + 1_000);
      controller = follower;

      await waitForRestarted([ns], revision, 8);
      await waitForPodsAt([ns], revision, 16);
      for (const n of names) {
        expect(await replicaSetsOf(ns, n)).toHaveLength(2);
        const [d] = (await deployments(ns)).filter((x) => x.metadata?.name === n);
        expect(d && annotation(d, DEPLOYMENT_REVISION)).toBe('2');
      }
    });
  }, 240_000);

  it('heals pods that escaped while the webhook was down, once, after it is back', async () => {
    const ns = await install.newNamespace('r6-heal', { optedIn: true });
    await scenario([ns], async () => {
      await optInLabelled(ns);
      await apply(cluster, deployment('leaky', 1), { namespace: ns });
      await waitForPodsAt([ns], revision, 1);

      await install.stopWebhook();
      await cluster.apps.patchNamespacedDeploymentScale(
        { namespace: ns, name: 'leaky', body: { spec: { replicas: 3 } } },
        MERGE_PATCH,
      );
      const escaped = await waitFor('two pods to escape', async () => {
        const pods = (await livePods(ns)).filter(
          (p) =>
            p.metadata?.labels?.[STAMPED] === 'true' &&
            !p.metadata.labels[REVISION] &&
            !p.metadata.labels[SKIPPED],
        );
        return pods.length === 2 ? done(pods) : pending(pods.length);
      });
      expect(escaped).toHaveLength(2);
      // No heal while the webhook is down: its pods would escape too. Once the controller
      // counts the owner escaped, the step that did (and would have healed it) has finished.
      await waitFor('the controller to count an owner escaped', async () => {
        const states = await metricSamples(controller.metricsPort, 'outrigger_controller_owners');
        return (states.get('{state="escaped"}') ?? 0) >= 1 ? done(undefined) : pending(states);
      });
      await waveStepFinished(controller.metricsPort);
      const [held] = await deployments(ns);
      expect(held && annotation(held, HEALED_REVISION)).toBeUndefined();

      await install.resumeWebhook();
      await waitForPodsAt([ns], revision, 3);
      const [healed] = await deployments(ns);
      expect(healed && annotation(healed, HEALED_REVISION)).toBe(revision);
      expect(await eventsFor(ns, 'leaky', 'Healed')).toHaveLength(1);
      await controllerCaughtUp(
        controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, ns, 'leaky'),
      );
      expect(await replicaSetsOf(ns, 'leaky')).toHaveLength(2);
      expect(await eventsFor(ns, 'leaky', 'Healed')).toHaveLength(1);
    });
  }, 180_000);

  it('a steady cluster: for 60 s, seeing changes that decide nothing, the controller writes nothing', async () => {
    const ns = await install.newNamespace('r7-steady', { optedIn: true });
    await scenario([ns], async () => {
      await optInLabelled(ns);
      await apply(cluster, threeKinds, { namespace: ns });
      const ds = await waitForRollout(cluster, { kind: 'DaemonSet', namespace: ns, name: 'agent' });
      await waitForPodsAt([ns], revision, 4 + (ds.status?.desiredNumberScheduled ?? 0));
      await waitFor('the controller to count the three owners as current', async () => {
        const states = await metricSamples(controller.metricsPort, 'outrigger_controller_owners');
        return (states.get('{state="current"}') ?? 0) >= 3 ? done(undefined) : pending(states);
      });
      const port = controller.metricsPort;
      await controllerCaughtUp(port, 'deployments', nudgeDeployment(cluster, ns, 'web'));
      const before = await metricSum(port, 'outrigger_controller_writes_total');
      // For a minute, the controller sees the Deployment change (an annotation of the test's
      // own) and settles each time: every step it takes in that minute writes nothing.
      let rounds = 0;
      for (const end = Date.now() + 60_000; Date.now() < end; rounds++)
        await controllerCaughtUp(port, 'deployments', nudgeDeployment(cluster, ns, 'web'));
      const after = await metricSum(port, 'outrigger_controller_writes_total');
      expect(rounds).toBeGreaterThan(10);
      expect(after - before).toBe(0);
      expect(await metricSum(controller.metricsPort, 'outrigger_controller_leader')).toBe(1);
    });
  }, 150_000);
});

/** The namespace was created annotated: wait for the controller's label. */
async function optInLabelled(ns: string): Promise<void> {
  await waitFor(`the controller to label ${ns}`, async () => {
    const n = await cluster.core.readNamespace({ name: ns });
    return n.metadata?.labels?.[INJECTION_LABEL] === ENABLED
      ? done(undefined)
      : pending(n.metadata?.labels);
  });
}
