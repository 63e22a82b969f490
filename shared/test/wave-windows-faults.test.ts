// A wave across maintenance windows, and faults around its stop and its canary.

import { LAST_GOOD_REVISION, mustParseConfig, type PodCounts } from '../src';

import {
  R0,
  R1,
  T0,
  SECOND,
  CANARY_CONFIG,
  deployment,
  pod,
  OLD_PODS,
  podsAtRevision,
  Cluster,
  keyOf,
  entry,
  restartsOf,
  threeOwners,
  canaryRestarted,
} from './wave-fixtures';

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
