// A wave through planWave (shared/src/wave.ts), step by step, the way the controller runs it:
// assess every owner from the cluster, plan, carry the plan out as the controller does (the
// same patches, in the same order as controller/src/rollout.ts), let the Deployments roll, and
// plan again. Everything the next step knows comes from what the last one wrote, so these
// scenarios also check that the stage, the canary marks, the stop and the last good revision
// survive a restart of the controller. The rules of each piece have their own tests
// (wave-stage, gate, windows); this file checks they work together.

import {
  CANARY_REVISION,
  LAST_GOOD_REVISION,
  RESTARTED_REVISION,
  RESUME,
  ROLLED_BACK_FROM,
  WAVE_STAGE,
  WAVE_STOPPED,
  assessOwner,
  completionPatch,
  countRevisionPod,
  isRecord,
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

const R0 = '0000000000';
const R1 = '1111111111';
const T0 = Date.parse('2026-05-01T12:00:00Z');
const SECOND = 1000;
const PROXY = 'outrigger-proxy';
const NS: NamespaceMeta = { name: 'shop', annotations: { 'outrigger.dev/inject': 'enabled' } };

/** One canary, chosen by the owner's own label, soaking two minutes. */
const CANARY_CONFIG = [
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

function deployment(
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
function pod(name: string, proxy: 'running' | 'crashing' | 'starting'): PodLike {
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
const OLD_PODS: PodCounts = { escaped: 0, outdated: 2, injected: 2 };

/** Pods at the new revision, as controller/src/pods.ts counts them for the gate. */
function podsAtRevision(...pods: PodLike[]): PodCounts {
  const atRevision = pods.reduce<RevisionPods | undefined>(
    (c, p) => countRevisionPod(c, p, { proxy: PROXY }),
    undefined,
  );
  return { escaped: 0, outdated: 0, injected: pods.length, atRevision };
}

/** What the API server does with a JSON merge patch (RFC 7386), and the generation bump. */
function merge(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = merge(out[k], v);
  }
  return out;
}

function write(w: Workload, patch: Record<string, unknown>): Workload {
  const next = merge(w, patch) as Workload;
  const changed = JSON.stringify(next.spec) !== JSON.stringify(w.spec);
  const generation = (w.metadata?.generation ?? 0) + (changed ? 1 : 0);
  return { ...next, metadata: { ...next.metadata, generation } };
}

class Cluster {
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

  /** The writes of a plan, in the order controller/src/rollout.ts makes them. */
  carryOut(p: WavePlan, nowMs: number): void {
    if (p.resume) this.patchConfigMap(resumePatch(nowMs));
    else if (p.clearStop) this.patchConfigMap(clearStopPatch());
    if (p.stop) this.patchConfigMap(waveStopPatch({ stop: p.stop, revision: R1, nowMs }));
    if (p.record || p.lastGood) this.patchConfigMap(stagePatch(p.record, p.lastGood));
    for (const owner of p.complete) {
      const w = this.get(owner.name);
      this.workloads.set(
        owner.name,
        write(w, completionPatch(w.metadata?.annotations?.[RESTARTED_REVISION] ?? '')),
      );
    }
    for (const order of p.restart) {
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
    const next = merge({ metadata: { annotations: this.configMap } }, patch) as {
      metadata: { annotations: Labels };
    };
    this.configMap = next.metadata.annotations;
  }
}

const keyOf = (name: string) => `shop/Deployment/${name}`;
const entry = (p: WavePlan, name: string): WaveReportEntry => {
  const e = p.report.find((r) => ownerKey(r.owner) === keyOf(name));
  if (!e) throw new Error(`no report entry for ${name}`);
  return e;
};
const restartsOf = (p: WavePlan) =>
  p.restart.map((r) => ({
    name: r.owner.name,
    kind: r.kind,
    revision: r.revision,
    canary: r.canary,
    from: r.from,
  }));

/** api, cart and web, all on R0; only cart carries the canary label. */
function threeOwners(config = mustParseConfig(CANARY_CONFIG)): Cluster {
  return new Cluster(
    config,
    deployment('api'),
    deployment('cart', { labels: { ring: 'canary' } }),
    deployment('web'),
  );
}

/** Steps 1 and 2 of every scenario: the canary is restarted, and its rollout runs. */
function canaryRestarted(c: Cluster): void {
  c.carryOut(c.plan(T0), T0);
  c.pods.set('cart', {
    ...podsAtRevision(pod('cart-5d8c7-a1', 'starting')),
    outdated: 1,
    injected: 2,
  });
}

// ---------------------------------------------------------------------------------------------

describe('a wave with one canary that passes', () => {
  it('restarts the canary alone, soaks it, then rolls the rest and completes', () => {
    const c = threeOwners();

    // Step 1: only the owner matching the canary selector restarts, marked as the canary.
    const first = c.plan(T0);
    expect(restartsOf(first)).toEqual([
      { name: 'cart', kind: 'rollout', revision: R1, canary: true, from: undefined },
    ]);
    expect(first.stage).toBe('canary');
    for (const other of ['api', 'web'])
      expect(entry(first, other)).toMatchObject({ action: 'wait', reason: 'canary-stage' });
    const order = first.restart[0];
    if (!order) throw new Error('expected a restart');
    const patch = restartPatch({ workload: c.get('cart'), order, nowMs: T0 });
    expect(patch.metadata).toMatchObject({
      annotations: { [CANARY_REVISION]: R1, [RESTARTED_REVISION]: R1 },
    });
    c.carryOut(first, T0);

    // Step 2: the canary rolls; the gate waits for the rollout; nobody else starts. A
    // replacement controller would read the canary from the mark and not choose another.
    c.pods.set('cart', {
      ...podsAtRevision(pod('cart-5d8c7-a1', 'starting')),
      outdated: 1,
      injected: 2,
    });
    const rolling = c.plan(T0 + 30 * SECOND);
    expect(rolling.restart).toEqual([]);
    expect(entry(rolling, 'cart')).toMatchObject({
      action: 'follow',
      canary: true,
      gate: { state: 'pending' },
    });
    expect(rolling.stage).toBe('canary');

    // Step 3: the canary's rollout is complete and its pods Ready: the soak starts, recorded.
    const passedAt = T0 + 60 * SECOND;
    c.rolled(
      'cart',
      podsAtRevision(pod('cart-5d8c7-a1', 'running'), pod('cart-5d8c7-b2', 'running')),
    );
    const soak = c.plan(passedAt);
    expect(entry(soak, 'cart').gate).toMatchObject({ state: 'passed' });
    expect(soak).toMatchObject({
      stage: 'soaking',
      record: { revision: R1, stage: 'soaking', sinceMs: passedAt },
      restart: [],
      recheckAtMs: passedAt + 120 * SECOND,
    });
    c.carryOut(soak, passedAt);
    expect(c.configMap[WAVE_STAGE]).toBe(`${R1} soaking 2026-05-01T12:01:00Z`);

    // Step 4: a second before the soak ends, still nothing else starts, and nothing is written.
    const almost = c.plan(passedAt + 119 * SECOND);
    expect(almost).toMatchObject({ stage: 'soaking', record: undefined, restart: [] });

    // Step 5: the soak is over: the rest of the wave starts, as ordinary rollouts.
    const rollAt = passedAt + 120 * SECOND;
    const rest = c.plan(rollAt);
    expect(rest.stage).toBe('rolling');
    expect(restartsOf(rest)).toEqual([
      { name: 'api', kind: 'rollout', revision: R1, canary: undefined, from: undefined },
      { name: 'web', kind: 'rollout', revision: R1, canary: undefined, from: undefined },
    ]);
    c.carryOut(rest, rollAt);
    expect(c.get('api').metadata?.annotations?.[CANARY_REVISION]).toBeUndefined();

    // Step 6: they finish healthy: the wave is complete and R1 becomes the last good revision.
    c.rolled('api', podsAtRevision(pod('api-1', 'running'), pod('api-2', 'running')));
    c.rolled('web', podsAtRevision(pod('web-1', 'running'), pod('web-2', 'running')));
    const done = c.plan(rollAt + 60 * SECOND);
    expect(done).toMatchObject({
      stage: 'complete',
      lastGood: R1,
      record: { stage: 'complete' },
      restart: [],
    });
    c.carryOut(done, rollAt + 60 * SECOND);
    expect(c.configMap[LAST_GOOD_REVISION]).toBe(R1);

    // Step 7: nothing more to do or to write.
    const after = c.plan(rollAt + 120 * SECOND);
    expect(after).toMatchObject({
      stage: 'complete',
      restart: [],
      complete: [],
      record: undefined,
      lastGood: undefined,
    });
  });

  it('never passes the gate while the pods at the revision are not listed (podsSynced false)', () => {
    const c = threeOwners();
    canaryRestarted(c);
    c.rolled(
      'cart',
      podsAtRevision(pod('cart-5d8c7-a1', 'running'), pod('cart-5d8c7-b2', 'running')),
    );
    // However long it waits, the soak does not start on data the controller has not seen.
    for (const later of [60, 600, 6000]) {
      const p = c.plan(T0 + later * SECOND, { podsSynced: false });
      expect(entry(p, 'cart').gate).toEqual({
        state: 'pending',
        detail: 'the pods at the revision are not listed yet',
      });
      expect(p).toMatchObject({ stage: 'canary', record: undefined, restart: [] });
      expect(entry(p, 'api')).toMatchObject({ action: 'wait', reason: 'canary-stage' });
    }
    // Once listed, the same pods pass.
    expect(entry(c.plan(T0 + 60 * SECOND), 'cart').gate).toMatchObject({ state: 'passed' });
  });
});

describe('a wave whose canary proxy crash-loops', () => {
  const crashing = () =>
    podsAtRevision(pod('cart-5d8c7-x2x9q', 'crashing'), pod('cart-5d8c7-b2', 'running'));

  it('stops with proxy-failing, naming the container and the pod, and restarts nobody else', () => {
    const c = threeOwners();
    canaryRestarted(c);
    c.rolled('cart', crashing());
    const p = c.plan(T0 + 60 * SECOND);
    expect(p.stopped).toBe(true);
    expect(p.stop).toMatchObject({ owner: { name: 'cart' }, reason: 'proxy-failing' });
    expect(p.stop?.detail).toContain(
      `container ${PROXY} of pod cart-5d8c7-x2x9q is CrashLoopBackOff`,
    );
    expect(entry(p, 'cart')).toMatchObject({
      action: 'stop',
      reason: 'proxy-failing',
      gate: { state: 'failed' },
    });
    // No earlier revision completed a wave, so there is nothing to roll back to.
    expect(p.stage).toBe('stopped');
    expect(p.restart).toEqual([]);
    for (const other of ['api', 'web'])
      expect(entry(p, other)).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
    c.carryOut(p, T0 + 60 * SECOND);
    expect(c.configMap[WAVE_STOPPED]).toMatch(
      new RegExp(`^${R1} shop/Deployment/cart proxy-failing at `),
    );

    // The stop is in force: it is not written again, and still nothing starts.
    const next = c.plan(T0 + 120 * SECOND);
    expect(next).toMatchObject({ stopped: true, stop: undefined, restart: [], stage: 'stopped' });
  });

  it('with a last good revision, rolls the canary alone back to it, then reports it rolled back', () => {
    const c = threeOwners();
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    canaryRestarted(c);
    c.rolled('cart', crashing());

    // The step that sees the crash stops the wave and orders the rollback of the canary only.
    const stopAt = T0 + 60 * SECOND;
    const p = c.plan(stopAt);
    expect(p.stop).toMatchObject({ reason: 'proxy-failing' });
    expect(p.stage).toBe('rolling-back');
    expect(restartsOf(p)).toEqual([
      { name: 'cart', kind: 'rollback', revision: R0, canary: undefined, from: R1 },
    ]);
    expect(entry(p, 'cart')).toMatchObject({ action: 'restart', reason: 'rollback' });
    for (const other of ['api', 'web'])
      expect(entry(p, other)).toMatchObject({ action: 'wait', reason: 'wave-stopped' });

    // Carry out only the stop, as if the rollback's write had failed: the next plan, with the
    // stop in force, orders the same rollback again and still nothing else.
    c.carryOut({ ...p, restart: [] }, stopAt);
    const again = c.plan(stopAt + 5 * SECOND);
    expect(again).toMatchObject({ stopped: true, stop: undefined });
    expect(restartsOf(again)).toEqual([
      { name: 'cart', kind: 'rollback', revision: R0, canary: undefined, from: R1 },
    ]);

    // The rollback re-stamps R0, clears the canary mark and records where it came from.
    c.carryOut(again, stopAt + 5 * SECOND);
    const cart = c.get('cart');
    expect(cart.metadata?.annotations).toMatchObject({
      [ROLLED_BACK_FROM]: R1,
      [RESTARTED_REVISION]: R0,
    });
    expect(cart.metadata?.annotations?.[CANARY_REVISION]).toBeUndefined();
    expect(
      (cart.spec?.template?.metadata?.annotations ?? {})['outrigger.dev/config-revision'],
    ).toBe(R0);

    // While the rollback rolls, the wave is rolling back and orders nothing more.
    c.pods.set('cart', OLD_PODS);
    const rollingBack = c.plan(stopAt + 30 * SECOND);
    expect(rollingBack).toMatchObject({ stage: 'rolling-back', restart: [] });
    expect(entry(rollingBack, 'cart')).toMatchObject({ action: 'wait', reason: 'wave-stopped' });

    // Once it finished, the wave is rolled back; the rollback's completion is recorded.
    c.rolled('cart', OLD_PODS);
    const back = c.plan(stopAt + 90 * SECOND);
    expect(back).toMatchObject({ stage: 'rolled-back', restart: [], stopped: true });
    expect(back.complete.map((o) => o.name)).toEqual(['cart']);
  });

  it('an admin resume acknowledges the failure: the canary counts as passed and the stages start again', () => {
    const c = threeOwners();
    canaryRestarted(c);
    c.rolled('cart', crashing());
    c.carryOut(c.plan(T0 + 60 * SECOND), T0 + 60 * SECOND);
    c.resume();
    const resumeAt = T0 + 300 * SECOND;
    const p = c.plan(resumeAt);
    expect(p).toMatchObject({ resume: true, stopped: false, stop: undefined });
    expect(entry(p, 'cart').gate).toMatchObject({
      state: 'passed',
      detail: expect.stringContaining('acknowledged by the resume'),
    });
    // The soak starts from the resume, not from the old record.
    expect(p).toMatchObject({
      stage: 'soaking',
      record: { stage: 'soaking', sinceMs: resumeAt },
      restart: [],
    });
  });
});

describe('maintenance windows', () => {
  // Nights only, UTC; T0 is noon, so the window is closed and opens at 22:00.
  const NIGHTS = ['  windows:', '    - {start: "22:00", end: "04:00"}'];
  const OPENS = Date.parse('2026-05-01T22:00:00Z');
  const windowed = (canary: number) =>
    mustParseConfig(['rollout:', '  canary:', `    count: ${canary}`, ...NIGHTS].join('\n'));

  it('hold rollouts with window-closed until the next opening, but not heals', () => {
    const c = new Cluster(windowed(0), deployment('api'), deployment('leaky', { stamp: R1 }));
    // leaky is current, but two of its pods escaped injection: a heal.
    c.pods.set('leaky', { escaped: 2, outdated: 0, injected: 0 });
    const p = c.plan(T0);
    expect(restartsOf(p)).toEqual([
      { name: 'leaky', kind: 'heal', revision: R1, canary: undefined, from: undefined },
    ]);
    expect(entry(p, 'api')).toMatchObject({ action: 'wait', reason: 'window-closed' });
    expect(entry(p, 'api').detail).toContain('the next opens at 2026-05-01T22:00:00Z');
    expect(p).toMatchObject({ recheckAtMs: OPENS, nextWindowMs: OPENS });

    // At the opening the rollout starts.
    const open = c.plan(OPENS);
    expect(restartsOf(open).map((r) => r.name)).toEqual(['api', 'leaky']);
    expect(open.nextWindowMs).toBeUndefined();
  });

  it('hold the canary too; the rest wait for the canary stage', () => {
    const c = new Cluster(windowed(1), deployment('api'), deployment('web'));
    const p = c.plan(T0);
    expect(p.restart).toEqual([]);
    // api is the canary the stage chose; the window holds it like any rollout.
    expect(entry(p, 'api')).toMatchObject({ action: 'wait', reason: 'window-closed' });
    expect(entry(p, 'web')).toMatchObject({ action: 'wait', reason: 'canary-stage' });
    expect(p.recheckAtMs).toBe(OPENS);
    expect(restartsOf(c.plan(OPENS))).toEqual([
      { name: 'api', kind: 'rollout', revision: R1, canary: true, from: undefined },
    ]);
  });

  it('do not hold a rollback: it undoes a risk', () => {
    const config = windowed(1);
    const c = new Cluster(config, deployment('api'));
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    // Restarted as the canary last night; its proxy crash-loops now, at noon.
    c.carryOut(c.plan(OPENS - 86_400 * SECOND), OPENS - 86_400 * SECOND);
    c.rolled('api', podsAtRevision(pod('api-6f-zz', 'crashing')));
    const p = c.plan(T0);
    expect(p.stop).toMatchObject({ reason: 'proxy-failing' });
    expect(restartsOf(p)).toEqual([
      { name: 'api', kind: 'rollback', revision: R0, canary: undefined, from: R1 },
    ]);
  });
});

describe('faults around the stop and the canary', () => {
  const crashed = (): PodCounts => podsAtRevision(pod('cart-5d8c7-a1', 'crashing'));

  it('a rollback whose stop was never recorded still holds the wave: nothing restarts again', () => {
    const c = threeOwners();
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    canaryRestarted(c);
    c.rolled('cart', crashed());
    const stopAt = T0 + 60 * SECOND;
    const p = c.plan(stopAt);
    // the rollback is written, but the stop met a stale cache and is not on the ConfigMap
    c.carryOut({ ...p, stop: undefined }, stopAt);
    c.rolled('cart', OLD_PODS);
    for (const later of [5, 60, 600]) {
      const next = c.plan(stopAt + later * SECOND);
      expect(next.restart).toEqual([]);
      expect(next.stopped).toBe(true);
      expect(entry(next, 'cart')).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
    }
    // a resume after the rollback tries again, from the canary
    c.resume();
    const resumed = c.plan(stopAt + 700 * SECOND);
    expect(restartsOf(resumed)).toEqual([
      { name: 'cart', kind: 'rollout', revision: R1, canary: true, from: undefined },
    ]);
  });

  it('a canary whose patch was refused holds the canary stage while it backs off', () => {
    const c = threeOwners();
    const p = c.plan(T0, { backingOff: new Set([keyOf('cart')]) });
    expect(p.restart).toEqual([]);
    expect(p.stage).toBe('canary');
    expect(entry(p, 'cart')).toMatchObject({ action: 'wait', reason: 'write-refused' });
    for (const other of ['api', 'web'])
      expect(entry(p, other)).toMatchObject({ action: 'wait', reason: 'canary-stage' });
    expect(p.record).toBeUndefined();
  });

  it('a canary with no pod seen at the revision does not pass the gate', () => {
    const c = threeOwners();
    canaryRestarted(c);
    c.rolled('cart', { escaped: 0, outdated: 0, injected: 0 });
    const p = c.plan(T0 + 60 * SECOND);
    expect(entry(p, 'cart').gate).toMatchObject({ state: 'pending' });
    expect(p.stage).toBe('canary');
  });

  it('a gate still pending at the deadline fails and stops the wave instead of holding it', () => {
    const config = mustParseConfig(CANARY_CONFIG);
    const c = threeOwners(config);
    canaryRestarted(c);
    // the rollout completes, but its one pod at the revision never becomes Ready
    c.rolled('cart', podsAtRevision(pod('cart-5d8c7-a1', 'starting')));
    const before = c.plan(T0 + 60 * SECOND);
    expect(entry(before, 'cart').gate).toMatchObject({ state: 'pending' });
    expect(before.recheckAtMs).toBeLessThanOrEqual(
      T0 + config.rollout.progressDeadlineSeconds * SECOND + 1,
    );
    const after = c.plan(T0 + (config.rollout.progressDeadlineSeconds + 1) * SECOND);
    expect(after.stop).toMatchObject({ reason: 'deadline-exceeded' });
    expect(after.stop?.detail).toMatch(/not healthy \d+s after the restart/);
  });
});
