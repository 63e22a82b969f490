// planWave: the budget and the order, all state in the cluster (a restarted controller never
// restarts twice), and a stalled rollout stopping the wave.

import {
  assessOwner,
  compareOwners,
  completionPatch,
  ownerKey,
  readWave,
  restartPatch,
  RESUME,
  RESUMED_AT,
  WAVE_STOPPED,
} from '../src';
import type { Workload } from '../src/rollout/rollout-status';
import {
  R0,
  R1,
  NOW,
  ago,
  Status,
  workload,
  restarted,
  configWith,
  input,
  plan,
  assess,
  outdated,
  rollingOurs,
  present,
  keys,
  entry,
  write,
} from './owner-fixtures';

describe('planWave: budget and order', () => {
  it('starts at most maxConcurrent minus the rollouts it follows', () => {
    const p = plan([
      rollingOurs('a', 'busy'),
      outdated('b', 'one'),
      outdated('c', 'two'),
      outdated('d', 'three'),
    ]);
    expect(keys(p)).toEqual(['b/Deployment/one', 'c/Deployment/two']);
    expect(entry(p, 'd/Deployment/three')).toMatchObject({ action: 'wait', reason: 'budget' });
    expect(entry(p, 'a/Deployment/busy')).toMatchObject({ action: 'follow', reason: 'following' });
  });

  it('starts nothing when the budget is full', () => {
    const p = plan([
      rollingOurs('a', 'x'),
      rollingOurs('a', 'y'),
      rollingOurs('a', 'z'),
      outdated('b', 'w'),
    ]);
    expect(p.restart).toEqual([]);
  });

  it('does not count rollouts it did not start, nor stalled ones, against the budget', () => {
    const theirs = assess(workload({ namespace: 'a', name: 'theirs', status: 'progressing' }));
    const stalled = assess(
      workload({
        namespace: 'a',
        name: 'stuck',
        annotations: restarted(R1, 60),
        status: 'deadline',
      }),
    );
    // The stall was acknowledged by a resume, so it does not stop the wave either.
    const wave = { stopped: undefined, resumeRequested: false, resumedAtMs: NOW };
    const p = plan(
      [theirs, stalled, outdated('b', 'one'), outdated('b', 'two'), outdated('b', 'three')],
      {
        wave,
      },
    );
    expect(p.stop).toBeUndefined();
    expect(p.restart).toHaveLength(3);
  });

  it('orders by namespace, then kind, then name, whatever the input order', () => {
    const owners = [
      outdated('b', 'a', 'Deployment'),
      outdated('a', 'z', 'StatefulSet'),
      outdated('a', 'b', 'Deployment'),
      outdated('a', 'a', 'Deployment'),
      outdated('a', 'q', 'DaemonSet'),
    ];
    const expected = [
      'a/DaemonSet/q',
      'a/Deployment/a',
      'a/Deployment/b',
      'a/StatefulSet/z',
      'b/Deployment/a',
    ];
    for (const order of [owners, [...owners].reverse()]) {
      const p = plan(order, { rollout: configWith({ maxConcurrent: 10 }).rollout });
      expect(keys(p)).toEqual(expected);
      expect(p.report.map((e) => ownerKey(e.owner))).toEqual(expected);
    }
    const a = present(owners[0], 'an owner').owner;
    expect(compareOwners(a, { ...a })).toBe(0);
  });

  it('restarts to the target revision with the kind of restart due', () => {
    const p = plan([outdated('a', 'x')]);
    expect(p.restart).toEqual([
      { owner: { namespace: 'a', kind: 'Deployment', name: 'x' }, kind: 'rollout', revision: R1 },
    ]);
  });
});

describe('planWave: all state in the cluster, so a restarted controller never restarts twice', () => {
  it('plans nothing new from the same cluster once the restarts are recorded', () => {
    let cluster = ['one', 'two', 'three', 'four'].map((name) =>
      workload({ namespace: 'shop', name, stamp: R0 }),
    );
    const round = () => plan(cluster.map((w) => assessOwner(input(w))));
    const first = round();
    expect(keys(first)).toEqual([
      'shop/Deployment/four',
      'shop/Deployment/one',
      'shop/Deployment/three',
    ]);
    // The controller writes, then dies; its replacement reads the same cluster.
    cluster = cluster.map((w) => {
      const order = first.restart.find((r) => r.owner.name === w.metadata?.name);
      return order ? write(w, restartPatch({ workload: w, order, nowMs: NOW })) : w;
    });
    const second = round();
    expect(second.restart).toEqual([]);
    expect(second.report.filter((e) => e.action === 'follow')).toHaveLength(3);
    expect(entry(second, 'shop/Deployment/two')).toMatchObject({
      action: 'wait',
      reason: 'budget',
    });
  });

  it('records completion, then frees the slot, and never restarts the finished owner again', () => {
    const w0 = workload({ name: 'one', stamp: R0 });
    const order = present(plan([assessOwner(input(w0))]).restart[0], 'a restart');
    const restartedW = write(w0, restartPatch({ workload: w0, order, nowMs: NOW }));
    // The Deployment controller finishes the rollout.
    const done = {
      ...restartedW,
      status: { ...restartedW.status, observedGeneration: restartedW.metadata?.generation },
    } as Workload;
    const p = plan([assessOwner(input(done, { nowMs: NOW + 60_000 }))], { nowMs: NOW + 60_000 });
    expect(p.complete).toEqual([order.owner]);
    expect(p.restart).toEqual([]);
    const recorded = write(done, completionPatch(R1));
    const again = plan([
      assessOwner(input(recorded, { pods: { escaped: 0, outdated: 1, injected: 2 } })),
    ]);
    expect(again.complete).toEqual([]);
    expect(again.restart).toEqual([]);
    expect(again.report[0]).toMatchObject({
      state: 'outdated',
      action: 'skip',
      reason: 'already-restarted',
    });
  });
});

describe('planWave: a stalled rollout stops the wave', () => {
  const stalledOurs = (name: string, status: Status = 'deadline') =>
    assess(workload({ namespace: 'a', name, annotations: restarted(R1, 60), status }));

  it('stops on a stall it follows, and starts nothing', () => {
    const p = plan([stalledOurs('bad'), outdated('b', 'next')]);
    expect(p.stop).toMatchObject({
      owner: { namespace: 'a', kind: 'Deployment', name: 'bad' },
      reason: 'rollout-stalled',
    });
    expect(p.stopped).toBe(true);
    expect(p.restart).toEqual([]);
    expect(entry(p, 'a/Deployment/bad')).toMatchObject({ state: 'stalled', action: 'stop' });
    expect(entry(p, 'b/Deployment/next')).toMatchObject({ action: 'wait', reason: 'wave-stopped' });
  });

  it('stops when our deadline passes', () => {
    const late = assess(
      workload({
        namespace: 'a',
        name: 'slow',
        annotations: restarted(R1, 900),
        status: 'progressing',
      }),
    );
    expect(plan([late]).stop).toMatchObject({ reason: 'deadline-exceeded' });
  });

  it('does not stop for a stall it did not start', () => {
    const theirs = assess(
      workload({ namespace: 'a', name: 'theirs', stamp: R0, status: 'deadline' }),
    );
    const p = plan([theirs, outdated('b', 'next')]);
    expect(p.stop).toBeUndefined();
    expect(keys(p)).toEqual(['b/Deployment/next']);
    expect(entry(p, 'a/Deployment/theirs')).toMatchObject({ state: 'stalled', action: 'wait' });
  });

  it('does not stop for a stall of a restart to an older revision: the new one may fix it', () => {
    const superseded = assess(
      workload({
        namespace: 'a',
        name: 'old',
        stamp: R0,
        annotations: restarted(R0, 900),
        status: 'progressing',
      }),
    );
    const p = plan([superseded]);
    expect(p.stop).toBeUndefined();
    expect(keys(p)).toEqual(['a/Deployment/old']);
  });

  it('stays stopped while the stop names the current revision, without writing it again', () => {
    const wave = readWave({ [WAVE_STOPPED]: `${R1} a/Deployment/bad rollout-stalled` });
    const p = plan([stalledOurs('bad'), outdated('b', 'next')], { wave });
    expect(p.stop).toBeUndefined();
    expect(p.stopped).toBe(true);
    expect(p.restart).toEqual([]);
  });

  it('a stop recorded at another revision is not in force', () => {
    const wave = readWave({ [WAVE_STOPPED]: `${R0} a/Deployment/bad rollout-stalled` });
    const p = plan([outdated('b', 'next')], { wave });
    expect(p.stopped).toBe(false);
    expect(keys(p)).toEqual(['b/Deployment/next']);
  });

  it('resumes when an admin asks, acknowledging the stalls of that moment', () => {
    const wave = readWave({
      [WAVE_STOPPED]: `${R1} a/Deployment/bad rollout-stalled`,
      [RESUME]: 'true',
    });
    const p = plan([stalledOurs('bad'), outdated('b', 'next')], { wave });
    expect(p.resume).toBe(true);
    expect(p.stop).toBeUndefined();
    expect(keys(p)).toEqual(['b/Deployment/next']);
    expect(entry(p, 'a/Deployment/bad')).toMatchObject({
      action: 'none',
      reason: 'stall-acknowledged',
    });
  });

  it('after a resume, only stalls that began later stop the wave again', () => {
    const wave = readWave({ [RESUMED_AT]: ago(10) });
    expect(plan([stalledOurs('old-stall')], { wave }).stop).toBeUndefined();
    const fresh = assess(
      workload({
        namespace: 'a',
        name: 'new',
        annotations: restarted(R1, 605),
        status: 'progressing',
      }),
    );
    expect(plan([fresh], { wave }).stop).toMatchObject({ reason: 'deadline-exceeded' });
  });
});
