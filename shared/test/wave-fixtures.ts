// Fixtures of the whole-wave tests: a fleet of Deployments and pods, and a wave run step by step
// (the API server's merge patch is owner-fixtures.ts's).

import {
  RESTARTED_REVISION,
  RESUME,
  assessOwner,
  completionPatch,
  countRevisionPod,
  mustParseConfig,
  ownerKey,
  planWave,
  readWave,
  restartPatch,
  resumePatch,
  clearStopPatch,
  stagePatch,
  waveStopPatch,
  type Config,
  type Labels,
  type NamespaceMeta,
  type PodCounts,
  type PodLike,
  type RevisionPods,
  type WaveInput,
  type WavePlan,
  type WaveReportEntry,
  type Workload,
} from '../src';
import { applyMergePatch, write } from './owner-fixtures';

export const R0 = '0000000000';
export const R1 = '1111111111';
export const T0 = Date.parse('2026-05-01T12:00:00Z');
export const SECOND = 1000;
export const PROXY = 'outrigger-proxy';
export const NS: NamespaceMeta = {
  name: 'shop',
  annotations: { 'outrigger.dev/inject': 'enabled' },
};

/** One canary, chosen by the owner's own label, soaking two minutes. */
export const CANARY_CONFIG = [
  'rollout:',
  '  maxConcurrent: 5',
  '  canary:',
  '    count: 1',
  '    soakSeconds: 120',
  '    ownerSelector:',
  '      matchLabels: {ring: canary}',
].join('\n');

// ---------------------------------------------------------------------------------------------
// The cluster: Deployments, the pods the controller counts for each, and the annotations of the
// configuration ConfigMap, where the wave's stop, stage and last good revision live.

export function deployment(
  name: string,
  o: { stamp?: string; labels?: Labels; annotations?: Labels } = {},
): Workload {
  const stamp = o.stamp ?? R0;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: 'shop',
      generation: 2,
      resourceVersion: '41',
      labels: { app: name, ...o.labels },
      annotations: { ...o.annotations },
    },
    spec: {
      replicas: 2,
      template: {
        metadata: {
          labels: { app: name, 'outrigger.dev/stamped': 'true' },
          annotations: {
            'outrigger.dev/owner-kind': 'Deployment',
            'outrigger.dev/owner-name': name,
            'outrigger.dev/config-revision': stamp,
          },
        },
        spec: { containers: [{ name: 'app', image: `${name}:1` }] },
      },
    },
    status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, availableReplicas: 2 },
  };
}

/** A pod at the new revision; the proxy is a native sidecar, so its status is an init container's. */
export function pod(name: string, proxy: 'running' | 'crashing' | 'starting'): PodLike {
  const proxyStatus =
    proxy === 'crashing'
      ? {
          name: PROXY,
          restartCount: 5,
          state: {
            waiting: {
              reason: 'CrashLoopBackOff',
              message: `back-off 2m40s restarting failed container=${PROXY} pod=${name}_shop`,
            },
          },
          lastState: { terminated: { reason: 'Error', exitCode: 1 } },
        }
      : { name: PROXY, restartCount: 0, state: { running: {} } };
  const ready = proxy === 'running' ? 'True' : 'False';
  return {
    metadata: { name, namespace: 'shop' },
    status: {
      conditions: [{ type: 'Ready', status: ready }],
      initContainerStatuses: [proxyStatus],
      containerStatuses: [{ name: 'app', restartCount: 0, state: { running: {} } }],
    },
  };
}

/** Pods still at the old revision, before the owner rolled. */
export const OLD_PODS: PodCounts = { escaped: 0, outdated: 2, injected: 2 };

/** Pods at the new revision, as controller/src/watch/pods.ts counts them for the gate. */
export function podsAtRevision(...pods: PodLike[]): PodCounts {
  const atRevision = pods.reduce<RevisionPods | undefined>(
    (c, p) => countRevisionPod(c, p, { proxy: PROXY }),
    undefined,
  );
  return { escaped: 0, outdated: 0, injected: pods.length, atRevision };
}

export class Cluster {
  readonly workloads = new Map<string, Workload>();
  readonly pods = new Map<string, PodCounts>();
  configMap: Labels = {};

  constructor(
    readonly config: Config,
    ...workloads: Workload[]
  ) {
    for (const w of workloads) this.workloads.set(w.metadata?.name ?? '', w);
  }

  get(name: string): Workload {
    const w = this.workloads.get(name);
    if (!w) throw new Error(`no workload ${name}`);
    return w;
  }

  plan(nowMs: number, extra: Partial<WaveInput> = {}): WavePlan {
    const owners = [...this.workloads.entries()].map(([name, workload]) =>
      assessOwner({
        workload,
        namespace: NS,
        config: this.config,
        revision: R1,
        pods: this.pods.get(name) ?? OLD_PODS,
        nowMs,
      }),
    );
    return planWave({
      owners,
      revision: R1,
      rollout: this.config.rollout,
      wave: readWave(this.configMap),
      nowMs,
      ...extra,
    });
  }

  /** The writes of a plan, in the order controller/src/wave/wave-runner.ts makes them. */
  carryOut(plan: WavePlan, nowMs: number): void {
    if (plan.resume) this.patchConfigMap(resumePatch(nowMs));
    else if (plan.clearStop) this.patchConfigMap(clearStopPatch());
    if (plan.stop) this.patchConfigMap(waveStopPatch({ stop: plan.stop, revision: R1, nowMs }));
    if (plan.record || plan.lastGood) this.patchConfigMap(stagePatch(plan.record, plan.lastGood));
    for (const owner of plan.complete) {
      const w = this.get(owner.name);
      this.workloads.set(
        owner.name,
        write(w, completionPatch(w.metadata?.annotations?.[RESTARTED_REVISION] ?? '')),
      );
    }
    for (const order of plan.restart) {
      const w = this.get(order.owner.name);
      this.workloads.set(order.owner.name, write(w, restartPatch({ workload: w, order, nowMs })));
    }
  }

  /** The Deployment controller finishes the rollout; the pods are the given ones. */
  rolled(name: string, pods: PodCounts): void {
    const w = this.get(name);
    this.workloads.set(name, {
      ...w,
      status: { ...w.status, observedGeneration: w.metadata?.generation },
    });
    this.pods.set(name, pods);
  }

  /** An admin asks to resume the stopped wave. */
  resume(): void {
    this.configMap = { ...this.configMap, [RESUME]: 'true' };
  }

  private patchConfigMap(patch: Record<string, unknown>): void {
    const next = applyMergePatch({ metadata: { annotations: this.configMap } }, patch) as {
      metadata: { annotations: Labels };
    };
    this.configMap = next.metadata.annotations;
  }
}

export const keyOf = (name: string) => `shop/Deployment/${name}`;
export const entry = (plan: WavePlan, name: string): WaveReportEntry => {
  const e = plan.report.find((r) => ownerKey(r.owner) === keyOf(name));
  if (!e) throw new Error(`no report entry for ${name}`);
  return e;
};
export const restartsOf = (plan: WavePlan) =>
  plan.restart.map((r) => ({
    name: r.owner.name,
    kind: r.kind,
    revision: r.revision,
    canary: r.canary,
    from: r.from,
  }));

/** api, cart and web, all on R0; only cart carries the canary label. */
export function threeOwners(config = mustParseConfig(CANARY_CONFIG)): Cluster {
  return new Cluster(
    config,
    deployment('api'),
    deployment('cart', { labels: { ring: 'canary' } }),
    deployment('web'),
  );
}

/** Steps 1 and 2 of every scenario: the canary is restarted, and its rollout runs. */
export function canaryRestarted(cluster: Cluster): void {
  cluster.carryOut(cluster.plan(T0), T0);
  cluster.pods.set('cart', {
    ...podsAtRevision(pod('cart-5d8c7-a1', 'starting')),
    outdated: 1,
    injected: 2,
  });
}

// ---------------------------------------------------------------------------------------------
