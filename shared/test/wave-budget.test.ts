// The budget of rollouts at once, where a wave fails: a restart that replaces a rollout of ours
// still rolling (a rollback, or a newer revision) adds no rollout, so no budget holds it, even
// one an admin lowered below what is rolling; and an owner backing off after a refused write
// takes no slot another owner's rollback could use.

import {
  LAST_GOOD_REVISION,
  RESTARTED_AT,
  RESTARTED_REVISION,
  formatTime,
  mustParseConfig,
} from '../src';
import {
  R0,
  T0,
  SECOND,
  pod,
  podsAtRevision,
  entry,
  restartsOf,
  Cluster,
  deployment,
} from './wave-fixtures';

const config = (maxConcurrent: number, canaries: number) =>
  mustParseConfig(
    [
      'rollout:',
      `  maxConcurrent: ${maxConcurrent}`,
      '  canary:',
      `    count: ${canaries}`,
      '    soakSeconds: 120',
      '    ownerSelector:',
      '      matchLabels: {ring: canary}',
    ].join('\n'),
  );

const CANARIES = ['c1', 'c2', 'c3'];

function fleet(maxConcurrent: number, canaries: number): Cluster {
  return new Cluster(
    config(maxConcurrent, canaries),
    ...CANARIES.map((n) => deployment(n, { labels: { ring: 'canary' } })),
    deployment('api'),
  );
}

/** The same cluster, its rollout settings edited (which changes no revision). */
function withRollout(c: Cluster, maxConcurrent: number, canaries: number): Cluster {
  const edited = new Cluster(config(maxConcurrent, canaries), ...c.workloads.values());
  for (const [name, pods] of c.pods) edited.pods.set(name, pods);
  edited.configMap = c.configMap;
  return edited;
}

const crashLooping = (name: string) => ({
  ...podsAtRevision(pod(`${name}-x`, 'crashing')),
  outdated: 1,
  injected: 2,
});

describe('the budget where a wave fails', () => {
  it('rolls back every canary still rolling, however many, when maxConcurrent was lowered below them', () => {
    const c = fleet(3, 3);
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    c.carryOut(c.plan(T0), T0);
    for (const n of CANARIES) c.pods.set(n, crashLooping(n));
    // The admin lowers the budget to 1 while three canaries crash-loop.
    const p = withRollout(c, 1, 3).plan(T0 + 60 * SECOND);
    expect(p.stage).toBe('rolling-back');
    expect(restartsOf(p).map((r) => [r.name, r.kind])).toEqual(
      CANARIES.map((n) => [n, 'rollback']),
    );
    expect(entry(p, 'api')).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
  });

  it('gives the slot of a canary backing off after a refused write to the next rollback', () => {
    const c = fleet(2, 2);
    c.configMap = { [LAST_GOOD_REVISION]: R0 };
    c.carryOut(c.plan(T0), T0);
    const failing = (n: string) =>
      podsAtRevision(pod(`${n}-x`, 'crashing'), pod(`${n}-y`, 'running'));
    c.rolled('c1', failing('c1'));
    c.rolled('c2', failing('c2'));
    const p = withRollout(c, 1, 2).plan(T0 + 60 * SECOND, {
      backingOff: new Set(['shop/Deployment/c1']),
    });
    expect(restartsOf(p).map((r) => [r.name, r.kind])).toEqual([['c2', 'rollback']]);
    expect(entry(p, 'c1')).toMatchObject({ action: 'wait', reason: 'write-refused' });
  });

  it('replaces a rollout of ours to an older revision at once, in the slot that rollout holds', () => {
    const old = 'aaaaaaaaaa';
    const api = deployment('api', {
      stamp: old,
      annotations: { [RESTARTED_REVISION]: old, [RESTARTED_AT]: formatTime(T0 - 10 * SECOND) },
    });
    // Still rolling: the Deployment controller has not observed the restart's generation.
    api.metadata = { ...api.metadata, generation: 3 };
    const c = new Cluster(
      mustParseConfig('rollout:\n  maxConcurrent: 1\n  canary: {count: 0}'),
      api,
      deployment('web'),
    );
    const p = c.plan(T0);
    expect(restartsOf(p).map((r) => r.name)).toEqual(['api']);
    expect(entry(p, 'web')).toMatchObject({ action: 'wait', reason: 'budget' });
  });
});
