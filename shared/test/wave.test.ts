// A wave through planWave (shared/src/rollout/wave.ts), step by step, the way the controller runs it:
// assess every owner from the cluster, plan, carry the plan out as the controller does (the
// same patches, in the same order as controller/src/wave/wave-runner.ts), let the Deployments roll, and
// plan again. Everything the next step knows comes from what the last one wrote, so these
// scenarios also check that the stage, the canary marks, the stop and the last good revision
// survive a restart of the controller. The rules of each piece have their own tests
// (wave-stage, gate, windows); this file checks they work together.

import {
  CANARY_REVISION,
  LAST_GOOD_REVISION,
  RESTARTED_REVISION,
  ROLLED_BACK_FROM,
  WAVE_STAGE,
  WAVE_STOPPED,
  mustParseConfig,
  restartPatch,
} from '../src';

import {
  R0,
  R1,
  T0,
  SECOND,
  PROXY,
  pod,
  OLD_PODS,
  podsAtRevision,
  entry,
  restartsOf,
  threeOwners,
  canaryRestarted,
  Cluster,
  CANARY_CONFIG,
  deployment,
} from './wave-fixtures';

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

  it('rolls back a canary still rolling when the budget is spent: its rollback takes the slot its rollout holds', () => {
    // One rollout at once, and the canary's still rolls: its new pods crash-loop, so it never
    // completes. Its rollback replaces that rollout; it must not wait for a free slot.
    const c = threeOwners(
      mustParseConfig(CANARY_CONFIG.replace('maxConcurrent: 5', 'maxConcurrent: 1')),
    );
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    canaryRestarted(c);
    c.pods.set('cart', {
      ...podsAtRevision(pod('cart-5d8c7-x2x9q', 'crashing')),
      outdated: 1,
      injected: 2,
    });
    const p = c.plan(T0 + 60 * SECOND);
    expect(p.stop).toMatchObject({ owner: { name: 'cart' }, reason: 'proxy-failing' });
    expect(p.stage).toBe('rolling-back');
    expect(restartsOf(p)).toEqual([
      { name: 'cart', kind: 'rollback', revision: R0, canary: undefined, from: R1 },
    ]);
    // The others still wait for the stopped wave, not for the budget.
    for (const other of ['api', 'web'])
      expect(entry(p, other)).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
  });

  it('leaves a canary whose automatic restarts were disabled meanwhile on the failed revision, and says so', () => {
    const c = threeOwners();
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    canaryRestarted(c);
    c.rolled('cart', crashing());
    // While the gate judged it, the team disabled automatic restarts on cart's template.
    const cart = c.get('cart');
    const template = cart.spec?.template ?? {};
    c.workloads.set('cart', {
      ...cart,
      spec: {
        ...cart.spec,
        template: {
          ...template,
          metadata: {
            ...template.metadata,
            annotations: {
              ...template.metadata?.annotations,
              'outrigger.dev/auto-restart': 'disabled',
            },
          },
        },
      },
    });
    const p = c.plan(T0 + 60 * SECOND);
    expect(p.stop).toMatchObject({ reason: 'proxy-failing' });
    expect(p.restart).toEqual([]);
    expect(entry(p, 'cart')).toMatchObject({ action: 'stop', reason: 'proxy-failing' });
    c.carryOut(p, T0 + 60 * SECOND);
    const after = c.plan(T0 + 70 * SECOND);
    expect(after.restart).toEqual([]);
    expect(entry(after, 'cart')).toMatchObject({
      action: 'skip',
      reason: 'auto-restart-disabled',
      detail: expect.stringContaining('not rolled back to 0000000000'),
    });
    for (const other of ['api', 'web'])
      expect(entry(after, other)).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
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

describe('a namespace that opts in after the wave completed', () => {
  it('has no canary stage and no gate: its owners restart within the budget, as documented', () => {
    const fresh = (name: string) => {
      const d = deployment(name, { labels: { ring: 'canary' } });
      const template = d.spec?.template ?? {};
      // Pods that predate injection: the template carries no stamp.
      return {
        ...d,
        spec: { ...d.spec, template: { ...template, metadata: { labels: { app: name } } } },
      } as typeof d;
    };
    const names = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'];
    const c = new Cluster(mustParseConfig(CANARY_CONFIG), ...names.map(fresh));
    for (const n of names) c.pods.set(n, { escaped: 0, outdated: 0, injected: 0 });
    c.configMap = {
      [LAST_GOOD_REVISION]: R1,
      [WAVE_STAGE]: `${R1} complete 2026-05-01T11:00:00Z`,
    };
    const p = c.plan(T0);
    expect(p.stage).toBe('rolling');
    expect(restartsOf(p).map((r) => [r.name, r.kind, r.canary])).toEqual(
      names.slice(0, 5).map((n) => [n, 'rollout', undefined]),
    );
    for (const n of names.slice(5))
      expect(entry(p, n)).toMatchObject({ action: 'wait', reason: 'budget' });
    c.carryOut(p, T0);
    // Restarted and rolling: followed, never judged by a gate, so no stop for trouble alone.
    const next = c.plan(T0 + 10 * SECOND);
    expect(next.report.every((e) => e.gate === undefined)).toBe(true);
  });
});
