// The controller's chaos loop, used by e2e/test/chaos.test.ts (a few
// cycles) and make chaos (e2e/bench/chaos.ts, for minutes). Each cycle changes the configuration,
// so a wave restarts every owner at most two at a time, and during the wave: a policy refuses
// the controller's writes to one owner; the leader is killed with SIGKILL (and a new replica
// started in its place); the API server is restarted and frozen (SIGSTOP) for a few seconds;
// then the refusal is lifted. The cycle passes when, from the cluster's own records, every owner
// ends on the new revision with exactly one new ReplicaSet, no replica went more than 2 s
// without answering /healthz (probed from a worker thread), and no replica exited by itself.

import { CoordinationV1Api, type V1Deployment } from '@kubernetes/client-node';
import {
  CONFIG_MAP_NAME,
  REVISION,
  RESTARTED_REVISION,
  WAVE_STOPPED,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import { apply, remove } from './apply';
import type { CycleFigures } from './chaos-summary';
import type { Cluster } from './cluster';
import type { LocalApiServer, ApiServerRestart } from './disrupt';
import { deploymentYaml } from './fixtures';
import { HealthWatch, type TargetHealth } from './health-watch';
import { TestInstall, type ControllerProcess } from './install';
import { metricSamples, metricSum } from './metrics';
import { describeExit } from './process';
import { behind, noteCompletion, templateRevision } from './owner-progress';
import { refusingPolicy, waitForDryRun } from './refusals';
import { seededRandom } from './seeded-random';
import { done, pending, waitFor } from './wait';

const DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';
const LEASE = 'outrigger-controller';
/** The owner the policy refuses: it sorts first, so every wave tries it at its first step. */
export const REFUSED_OWNER = 'a-refused';
/** A replica that went longer than this without answering /healthz fails the cycle. */
export const MAX_UNANSWERED_MS = 2000;

export interface ChaosOptions {
  cluster: Cluster;
  /** Owners besides the refused one (default 5). */
  owners?: number;
  /** Each owner's rollout takes at least this long (default 8). */
  minReadySeconds?: number;
  /** Restarted and frozen each cycle; undefined: neither (an external or shared cluster). */
  apiServer: LocalApiServer | undefined;
  /** Seeds the choices of each cycle (delays, signals, order); printed to replay a run. */
  seed: number;
  /** Progress lines. */
  log: (line: string) => void;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Two slots, deadlines far beyond a cycle, no canary stage: only a defect may stop the wave. */
export function chaosConfigYaml(cycle: number): string {
  return (
    `proxy: {env: [{name: CHAOS_CYCLE, value: "${cycle}"}]}\n` +
    'rollout: {maxConcurrent: 2, progressDeadlineSeconds: 600, canary: {count: 0}}\n'
  );
}

const revisionOf = (yaml: string): string => makeSnapshot(mustParseConfig(yaml)).revision;
const deploymentRevision = (o: { metadata?: { annotations?: Record<string, string> } }) =>
  Number(o.metadata?.annotations?.[DEPLOYMENT_REVISION] ?? 0);

interface Replica {
  name: string;
  controller: ControllerProcess;
}

/** One Outrigger install, its owners and its two controller replicas, cycled through chaos. */
export class ChaosLoop {
  readonly install: TestInstall;
  private readonly health = new HealthWatch();
  private readonly random: () => number;
  private readonly coordination: CoordinationV1Api;
  private replicas: Replica[] = [];
  private started = 0;
  /** Replicas killed on purpose: their exit is expected. */
  private readonly killed = new Set<ControllerProcess>();
  /** Replicas that exited when nobody killed them, with how. */
  readonly unexpectedExits: string[] = [];
  namespace = '';
  owners: string[] = [];
  private cycle = 0;

  constructor(private readonly options: ChaosOptions) {
    this.install = new TestInstall(options.cluster, {
      configYaml: chaosConfigYaml(0),
      prefix: 'chaos',
    });
    this.random = seededRandom(options.seed);
    this.coordination = options.cluster.kubeConfig.makeApiClient(CoordinationV1Api);
  }

  /** The install, the owners rolled out at the first revision, two replicas and their probes. */
  async setup(): Promise<void> {
    const { install } = this;
    await install.setup();
    this.namespace = await install.newNamespace('chaos-owners', { optedIn: true });
    const others = Array.from({ length: this.options.owners ?? 5 }, (_, i) => `owner-${i}`);
    this.owners = [REFUSED_OWNER, ...others];
    const spec = { minReadySeconds: this.options.minReadySeconds ?? 8 };
    const yaml = this.owners.map((name) => deploymentYaml(name, { spec })).join('---\n');
    await apply(this.options.cluster, yaml, { namespace: this.namespace });
    for (let i = 0; i < 2; i++) await this.startReplica();
    await this.waitForOwners(revisionOf(chaosConfigYaml(0)), 'the owners rolled out at first');
  }

  private async startReplica(): Promise<Replica> {
    this.started += 1;
    const name = `chaos-controller-${this.started}`;
    const controller = await this.install.startController(name);
    void controller.process.exited.then((status) => {
      if (!this.killed.has(controller)) {
        this.unexpectedExits.push(
          `${name} exited by itself (${describeExit(status)}); last lines of ${controller.process.logFile}:\n${controller.process.tail(15)}`,
        );
      }
    });
    await this.health.add(name, `http://127.0.0.1:${controller.metricsPort}/healthz`);
    const replica = { name, controller };
    this.replicas.push(replica);
    return replica;
  }

  /** Retries a call the API server may fail while it restarts. */
  private retrying<T>(what: string, call: () => Promise<T>): Promise<T> {
    return waitFor(what, async () => done(await call()), { timeoutMs: 120_000, intervalMs: 500 });
  }

  private async deployments(): Promise<V1Deployment[]> {
    const list = await this.retrying('the owners', () =>
      this.options.cluster.apps.listNamespacedDeployment({ namespace: this.namespace }),
    );
    return list.items;
  }

  private async leaseTransitions(): Promise<number> {
    const lease = await this.retrying('the Lease', () =>
      this.coordination.readNamespacedLease({ namespace: this.install.system, name: LEASE }),
    );
    return lease.spec?.leaseTransitions ?? 0;
  }

  /**
   * Every owner on `revision`, its rollout complete and recorded, and its pods injected.
   * Resolves with the longest time between an owner's rollout being complete (as this loop
   * polls it, every 500 ms) and the controller recording it: a watch gone silent shows there.
   */
  private async waitForOwners(revision: string, what: string): Promise<number> {
    const { cluster } = this.options;
    const complete = new Map<string, number>();
    const recorded = new Map<string, number>();
    await waitFor(
      what,
      async () => {
        const all = await this.deployments();
        const now = performance.now();
        for (const d of all) noteCompletion(d, revision, { now, complete, recorded });
        const late = all.map((d) => behind(d, revision)).filter((why) => why !== undefined);
        if (all.length !== this.owners.length || late.length > 0) return pending(late);
        const { items } = await cluster.core.listNamespacedPod({ namespace: this.namespace });
        const pods = items.filter((p) => !p.metadata?.deletionTimestamp);
        const stale = pods.filter((p) => p.metadata?.labels?.[REVISION] !== revision);
        return pods.length === this.owners.length && stale.length === 0
          ? done(undefined)
          : pending({ pods: pods.length, notAtRevision: stale.map((p) => p.metadata?.name) });
      },
      { timeoutMs: 300_000, intervalMs: 500 },
    );
    const lags = [...recorded].map(([name, at]) => at - (complete.get(name) ?? at));
    return Math.max(0, ...lags);
  }

  /** The replica that leads now (waits until exactly one does). */
  private async leader(): Promise<Replica> {
    return waitFor(
      'exactly one controller replica to lead',
      async () => {
        const leading: Replica[] = [];
        for (const r of this.replicas) {
          const on = await metricSum(r.controller.metricsPort, 'outrigger_controller_leader');
          if (on === 1) leading.push(r);
        }
        const [only] = leading;
        return only && leading.length === 1 ? done(only) : pending(leading.map((r) => r.name));
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }

  /** Until the leader counts at least every owner as current (its last wave step ran). */
  private async waitForLeaderToSeeCurrent(): Promise<void> {
    const leader = await this.leader();
    await waitFor(
      `${leader.name} to count every owner current`,
      async () => {
        const states = await metricSamples(
          leader.controller.metricsPort,
          'outrigger_controller_owners',
        );
        const current = states.get('{state="current"}') ?? 0;
        return current >= this.owners.length
          ? done(undefined)
          : pending(Object.fromEntries(states));
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }

  /** SIGKILLs the leader, starts a replica in its place; resolves when a replica leads again. */
  private async killLeader(): Promise<{ name: string; handoverMs: number }> {
    const leader = await this.leader();
    await this.health.remove(leader.name);
    this.killed.add(leader.controller);
    const killedAt = performance.now();
    await leader.controller.process.kill();
    this.replicas = this.replicas.filter((r) => r !== leader);
    this.options.log(`  killed the leader ${leader.name} (SIGKILL)`);
    await this.startReplica();
    const next = await this.leader();
    const handoverMs = performance.now() - killedAt;
    this.options.log(`  ${next.name} leads, ${(handoverMs / 1000).toFixed(1)} s after the kill`);
    return { name: leader.name, handoverMs };
  }

  /** Restarts and freezes the API server, in a seeded order; returns what was done. */
  private async disturbApiServer(): Promise<{ restart?: ApiServerRestart; freezeMs: number }> {
    const server = this.options.apiServer;
    if (!server) return { freezeMs: 0 };
    const freezeMs = 2000 + Math.round(this.random() * 3000);
    const signal = this.random() < 0.5 ? 'TERM' : 'KILL';
    const freezeFirst = this.random() < 0.5;
    const freeze = async () => {
      await server.freeze(freezeMs);
      this.options.log(`  froze the API server for ${freezeMs} ms`);
    };
    if (freezeFirst) await freeze();
    const restart = await server.restart({ downMs: 2000, signal });
    this.options.log(
      `  restarted the API server (SIG${signal}): stopped in ${restart.stoppedMs} ms, down 2 s, ready ${restart.readyMs} ms after its start`,
    );
    if (!freezeFirst) await freeze();
    return { restart, freezeMs };
  }

  /** Per owner, its Deployment revision number. */
  private async revisionNumbers(): Promise<Map<string, number>> {
    const all = await this.deployments();
    return new Map(all.map((d) => [d.metadata?.name ?? '', deploymentRevision(d)]));
  }

  /** The owner's ReplicaSets whose template carries `revision`. */
  private async replicaSetsAt(owner: string, revision: string): Promise<number> {
    const { items } = await this.retrying('the ReplicaSets', () =>
      this.options.cluster.apps.listNamespacedReplicaSet({
        namespace: this.namespace,
        labelSelector: `app=${owner}`,
      }),
    );
    return items.filter((rs) => templateRevision(rs) === revision).length;
  }

  /** A RestartFailed Event on the refused owner carrying this cycle's message. */
  private async refusedThisCycle(message: string): Promise<boolean> {
    const { items } = await this.options.cluster.core.listNamespacedEvent({
      namespace: this.namespace,
      fieldSelector: `involvedObject.name=${REFUSED_OWNER},reason=RestartFailed`,
    });
    return items.some((e) => e.message?.includes(message));
  }

  /** The first restart of the wave, and the refusal, both seen in the cluster. */
  private async waitForWaveUnderWay(revision: string, refusal: string): Promise<void> {
    await waitFor(
      'the wave to restart an owner and the policy to refuse one',
      async () => {
        const restarted = (await this.deployments()).filter(
          (d) => d.metadata?.annotations?.[RESTARTED_REVISION] === revision,
        );
        const refused = await this.refusedThisCycle(refusal);
        return restarted.length > 0 && refused
          ? done(undefined)
          : pending({ restarted: restarted.length, refused });
      },
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  }

  /** What went wrong this cycle, from the cluster's records and the probes. */
  private async violations(
    revision: string,
    restarts: Record<string, number>,
    health: TargetHealth[],
  ): Promise<string[]> {
    const out: string[] = [];
    for (const owner of this.owners) {
      if (restarts[owner] !== 1) out.push(`${owner}: ${restarts[owner]} new ReplicaSets, want 1`);
      const sets = await this.replicaSetsAt(owner, revision);
      if (sets !== 1) out.push(`${owner}: ${sets} ReplicaSets at revision ${revision}, want 1`);
    }
    for (const t of health.filter((h) => h.longestGapMs > MAX_UNANSWERED_MS)) {
      out.push(
        `${t.name}: no answer to /healthz for ${t.longestGapMs} ms (until ${t.longestGapEnded}; last failure ${t.lastFailure})`,
      );
    }
    const cm = await this.retrying('the ConfigMap', () =>
      this.options.cluster.core.readNamespacedConfigMap({
        namespace: this.install.system,
        name: CONFIG_MAP_NAME,
      }),
    );
    const stopped = cm.metadata?.annotations?.[WAVE_STOPPED];
    if (stopped) out.push(`the wave stopped: ${stopped}`);
    out.push(...this.unexpectedExits.splice(0));
    return out;
  }

  /** One cycle: a new revision, chaos during its wave, then the checks. */
  async runCycle(): Promise<CycleFigures> {
    this.cycle += 1;
    const cycle = this.cycle;
    const { cluster, log } = this.options;
    const began = performance.now();
    const before = await this.revisionNumbers();
    const transitionsBefore = await this.leaseTransitions();

    const refusal = `refused by chaos cycle ${cycle} of run ${this.install.run}`;
    const policy = refusingPolicy({
      name: `outrigger-e2e-chaos-${this.install.run}`,
      namespace: this.namespace,
      deployment: REFUSED_OWNER,
      accountsOf: this.install.system,
      message: refusal,
    });
    await this.retrying('the refusing policy', () => apply(cluster, policy));
    await waitForDryRun(cluster, { namespace: this.namespace, name: REFUSED_OWNER, refusal });

    const yaml = chaosConfigYaml(cycle);
    const revision = revisionOf(yaml);
    await this.retrying('the new configuration', () => this.install.setConfig(yaml));
    log(`cycle ${cycle}: revision ${revision}`);
    await this.waitForWaveUnderWay(revision, refusal);
    log(`  the wave restarts owners; ${REFUSED_OWNER} refused`);

    await sleep(Math.round(this.random() * 2000));
    const killed = await this.killLeader();
    const disturbed = await this.disturbApiServer();

    await this.retrying('the policy removed', () => remove(cluster, policy));
    await waitForDryRun(cluster, {
      namespace: this.namespace,
      name: REFUSED_OWNER,
      refusal: undefined,
    });
    log(`  lifted the refusal of ${REFUSED_OWNER}`);
    const recordLagMs = await this.waitForOwners(revision, `every owner on revision ${revision}`);
    // The leader has assessed the finished wave: a second restart would have been made by now.
    await this.waitForLeaderToSeeCurrent();

    const after = await this.revisionNumbers();
    const restarts = Object.fromEntries(
      this.owners.map((o) => [o, (after.get(o) ?? 0) - (before.get(o) ?? 0)]),
    );
    const health = await this.health.report();
    const figures: CycleFigures = {
      cycle,
      revision,
      seconds: (performance.now() - began) / 1000,
      restarts,
      killedLeader: killed.name,
      handoverMs: killed.handoverMs,
      leaderChanges: (await this.leaseTransitions()) - transitionsBefore,
      apiServerRestart: disturbed.restart,
      freezeMs: disturbed.freezeMs,
      recordLagMs,
      violations: await this.violations(revision, restarts, health),
    };
    log(
      `  done in ${figures.seconds.toFixed(0)} s (rollout complete to recorded: up to ${Math.round(recordLagMs)} ms): ${figures.violations.length === 0 ? 'every property holds' : figures.violations.join('; ')}`,
    );
    return figures;
  }

  /** Every replica's probes so far, the killed ones included. */
  probes(): Promise<TargetHealth[]> {
    return this.health.report();
  }

  async teardown(): Promise<void> {
    await this.health.stop();
    for (const r of this.replicas) this.killed.add(r.controller);
    await this.install.teardown();
  }
}
