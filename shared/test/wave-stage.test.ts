// The wave's stage machine (shared/src/rollout/wave-stage.ts), by itself, on owners as the planner
// sums them up (StageOwner). The rules checked here:
//   canary   - a wave first restarts at most `canary.count` owners that match the canary
//              selectors, and holds every other rollout;
//   soaking  - once every restarted canary passes the gate, the soak starts (recorded once, so
//              a new leader neither skips nor restarts it);
//   rolling  - only when the soak is over, or when there is nothing to judge first (count 0,
//              no owner matches the selectors), may the rest start;
//   complete - nothing left to restart, follow or judge; the revision becomes the last good;
//   stopped  - a stopped wave holds everything; with onFailure rollback and an earlier good
//              revision, the owners the wave restarted go back to it.
// shared/test/wave.test.ts plays the same rules through planWave.

import {
  LAST_GOOD_REVISION,
  WAVE_STAGE,
  formatStageRecord,
  parseStageRecord,
  readLastGood,
  stagePatch,
  type StageInput,
  type StageOwner,
  type StageRecord,
} from '../src';

import {
  R0,
  R1,
  NOW,
  SOAK,
  PASSED,
  PENDING,
  FAILED,
  rollout,
  owner,
  outdated,
  canary,
  restarted,
  current,
  decide,
  sorted,
  soaking,
  recorded,
} from './wave-stage-fixtures';

describe('the canary stage', () => {
  it('restarts the first eligible owner and holds the others', () => {
    const d = decide({ owners: [outdated('a'), outdated('b'), outdated('c')] });
    expect(d).toMatchObject({ stage: 'canary', record: undefined, rollback: undefined });
    expect(sorted(d.canaries)).toEqual(['a']);
    expect(sorted(d.held)).toEqual(['b', 'c']);
  });

  it('restarts up to `count` canaries', () => {
    const d = decide({
      rollout: rollout({ count: 2 }),
      owners: [outdated('a'), outdated('b'), outdated('c')],
    });
    expect(sorted(d.canaries)).toEqual(['a', 'b']);
    expect(sorted(d.held)).toEqual(['c']);
  });

  it('chooses only owners that match the canary selectors', () => {
    const d = decide({
      rollout: rollout({ count: 2 }),
      owners: [
        outdated('a', { canaryEligible: false }),
        outdated('b'),
        outdated('c', { canaryEligible: false }),
      ],
    });
    expect(sorted(d.canaries)).toEqual(['b']);
    expect(sorted(d.held)).toEqual(['a', 'c']);
  });

  it('counts the canaries restarted already against `count`', () => {
    const d = decide({
      rollout: rollout({ count: 2 }),
      owners: [canary('a', PENDING), outdated('b'), outdated('c')],
    });
    expect(sorted(d.canaries)).toEqual(['b']);
    expect(sorted(d.held)).toEqual(['c']);
  });

  it('waits for a restarted canary that has not passed the gate yet, holding the rest', () => {
    const d = decide({ owners: [canary('a', PENDING), outdated('b'), outdated('c')] });
    expect(d).toMatchObject({ stage: 'canary', record: undefined, recheckAtMs: undefined });
    expect(d.canaries.size).toBe(0);
    expect(sorted(d.held)).toEqual(['b', 'c']);
    expect(d.detail).toBe('waiting for 1 canary owners to pass the gate: a: 1 of 2 pods Ready');
  });

  it('holds rollouts only: heals and shedding are not the new revision and go on', () => {
    const d = decide({
      owners: [
        canary('a', PENDING),
        outdated('b'),
        owner('c', { candidate: 'heal' }),
        owner('d', { candidate: 'shed' }),
      ],
    });
    expect(sorted(d.held)).toEqual(['b']);
  });

  it('goes straight to rolling when no owner matches the canary selectors: nothing to judge first', () => {
    const d = decide({
      owners: [outdated('a', { canaryEligible: false }), outdated('b', { canaryEligible: false })],
    });
    expect(d).toMatchObject({
      stage: 'rolling',
      record: { revision: R1, stage: 'rolling', sinceMs: NOW },
    });
    expect(d.held.size).toBe(0);
  });

  // The one owner the selectors name is busy with a rollout somebody else started (waiting), so
  // it is not a candidate this minute. Skipping the stage here would record 'rolling' and start
  // every other owner at once, and the canary stage would never come back for this revision.
  it('waits for the only eligible owner while it finishes a rollout of its own', () => {
    const d = decide({
      owners: [
        owner('a', { waiting: true, busy: true }),
        outdated('b', { canaryEligible: false }),
        outdated('c', { canaryEligible: false }),
      ],
    });
    expect(d.stage).toBe('canary');
    expect(sorted(d.held)).toEqual(['b', 'c']);
    expect(d.record).toBeUndefined();
  });

  it('has no canary stage with count 0, and records nothing for it', () => {
    const d = decide({ rollout: rollout({ count: 0 }), owners: [outdated('a'), outdated('b')] });
    expect(d).toMatchObject({ stage: 'rolling', record: undefined });
    expect(d.held.size).toBe(0);
    expect(d.canaries.size).toBe(0);
  });
});

describe('the soak', () => {
  const owners = [canary('a', PASSED), outdated('b'), outdated('c')];

  it('starts when every canary passed the gate, and is recorded with its start', () => {
    const d = decide({ owners });
    expect(d).toMatchObject({
      stage: 'soaking',
      record: { revision: R1, stage: 'soaking', sinceMs: NOW },
      recheckAtMs: NOW + SOAK * 1000,
    });
    expect(sorted(d.held)).toEqual(['b', 'c']);
  });

  it('is recorded once: a recorded soak goes on from its recorded start', () => {
    const since = NOW - 60_000;
    const d = decide({ owners, record: soaking(since) });
    expect(d).toMatchObject({
      stage: 'soaking',
      record: undefined,
      recheckAtMs: since + SOAK * 1000,
    });
    expect(sorted(d.held)).toEqual(['b', 'c']);
  });

  it('ends at since + soakSeconds exactly, and the rest of the wave starts', () => {
    const since = NOW - SOAK * 1000;
    expect(decide({ owners, record: soaking(since), nowMs: since + SOAK * 1000 - 1 }).stage).toBe(
      'soaking',
    );
    const d = decide({ owners, record: soaking(since) });
    expect(d).toMatchObject({
      stage: 'rolling',
      record: { revision: R1, stage: 'rolling', sinceMs: NOW },
    });
    expect(d.held.size).toBe(0);
  });

  it('does not end while a canary is not passing, even after the soak time', () => {
    const d = decide({
      owners: [canary('a', PENDING), outdated('b')],
      record: soaking(NOW - 3600_000),
    });
    expect(d).toMatchObject({ stage: 'soaking', record: undefined });
    expect(sorted(d.held)).toEqual(['b']);
  });

  it('needs every canary to pass, not just one', () => {
    const d = decide({
      rollout: rollout({ count: 2 }),
      owners: [canary('a', PASSED), canary('b', PENDING), outdated('c')],
    });
    expect(d).toMatchObject({ stage: 'canary', record: undefined });
    expect(sorted(d.held)).toEqual(['c']);
  });

  it('is skipped with soakSeconds 0', () => {
    const d = decide({ rollout: rollout({ soakSeconds: 0 }), owners });
    expect(d).toMatchObject({ stage: 'rolling', record: { stage: 'rolling', sinceMs: NOW } });
  });

  it('ignores a record of another revision: a new configuration soaks anew', () => {
    const d = decide({ owners, record: soaking(NOW - 3600_000, R0) });
    expect(d).toMatchObject({
      stage: 'soaking',
      record: { revision: R1, stage: 'soaking', sinceMs: NOW },
    });
  });
});

describe('rolling and complete', () => {
  it('once recorded, rolling lets every rollout start and is not recorded again', () => {
    const d = decide({
      owners: [canary('a', PASSED), outdated('b'), outdated('c')],
      record: recorded('rolling'),
    });
    expect(d).toMatchObject({ stage: 'rolling', record: undefined });
    expect(d.held.size).toBe(0);
  });

  it('an owner that turns outdated after the wave completed rolls without a new canary stage', () => {
    const d = decide({
      owners: [current('a'), outdated('b')],
      record: recorded('complete'),
      lastGood: R1,
    });
    expect(d).toMatchObject({ stage: 'rolling', record: undefined });
    expect(d.held.size).toBe(0);
  });

  it('completes when nothing is left to restart, follow or judge, and records the last good revision', () => {
    const d = decide({
      owners: [restarted('a'), restarted('b'), current('c')],
      record: recorded('rolling'),
      lastGood: R0,
    });
    expect(d).toMatchObject({
      stage: 'complete',
      record: { revision: R1, stage: 'complete', sinceMs: NOW },
      lastGood: R1,
    });
  });

  it('writes nothing more once complete is recorded', () => {
    const d = decide({ owners: [restarted('a')], record: recorded('complete'), lastGood: R1 });
    expect(d).toMatchObject({ stage: 'complete', record: undefined, lastGood: undefined });
  });

  it.each<[string, StageOwner]>([
    ['a rollout candidate', outdated('x')],
    ['a shedding candidate', owner('x', { candidate: 'shed' })],
    ['an owner waiting for a rollout someone else started', owner('x', { waiting: true })],
    ['a restart of ours still rolling', owner('x', { following: true })],
    ['an owner of the wave whose gate is pending', restarted('x', PENDING)],
  ])('is not complete with %s', (_name, o) => {
    const d = decide({ owners: [restarted('a'), o], record: recorded('rolling') });
    expect(d.stage).toBe('rolling');
    expect(d.lastGood).toBeUndefined();
  });

  it('a heal left to do does not keep the wave from completing', () => {
    const d = decide({
      owners: [restarted('a'), owner('x', { candidate: 'heal' })],
      record: recorded('rolling'),
    });
    expect(d.stage).toBe('complete');
  });
});

describe('a stopped wave', () => {
  const owners = [canary('a', FAILED), restarted('b'), outdated('c'), current('d')];

  it('with onFailure rollback and an earlier good revision, rolls back every owner the wave restarted', () => {
    const d = decide({ stopped: true, owners, lastGood: R0 });
    expect(d).toMatchObject({
      stage: 'rolling-back',
      rollback: { keys: ['a', 'b'], to: R0, kept: [] },
      record: undefined,
    });
    expect(d.held.size).toBe(0);
    expect(d.canaries.size).toBe(0);
    expect(d.detail).toBe(`rolling 2 owners back from ${R1} to ${R0}`);
  });

  it('is rolling back while a rollback of ours is still rolling, then rolled back', () => {
    const back = owner('a', { rollingBack: true, candidate: 'rollout' });
    expect(decide({ stopped: true, owners: [back], lastGood: R0 })).toMatchObject({
      stage: 'rolling-back',
      rollback: undefined,
    });
    expect(decide({ stopped: true, owners: [outdated('a')], lastGood: R0 })).toMatchObject({
      stage: 'rolled-back',
      rollback: undefined,
      detail: `the owners the wave to ${R1} restarted are back on ${R0}`,
    });
  });

  it.each<[string, Partial<StageInput>, string]>([
    [
      'onFailure stop',
      { rollout: rollout({}, { onFailure: 'stop' }), lastGood: R0 },
      'onFailure is stop',
    ],
    [
      'no revision completed a wave before',
      { lastGood: undefined },
      'no earlier revision completed a wave',
    ],
    [
      'the last good revision is this one',
      { lastGood: R1 },
      'no earlier revision completed a wave',
    ],
  ])('only stops with %s', (_name, i, why) => {
    const d = decide({ stopped: true, owners, ...i });
    expect(d).toMatchObject({
      stage: 'stopped',
      rollback: undefined,
      record: undefined,
      lastGood: undefined,
    });
    expect(d.detail).toContain(why);
  });
});

describe('the stage record on the ConfigMap', () => {
  it('round-trips through its one-line form', () => {
    const r: StageRecord = { revision: R1, stage: 'soaking', sinceMs: NOW };
    expect(formatStageRecord(r)).toBe(`${R1} soaking 2026-05-01T12:00:00Z`);
    expect(parseStageRecord(formatStageRecord(r))).toEqual(r);
    expect(parseStageRecord(`  ${R1}   rolling   2026-05-01T12:00:00Z  `)).toEqual({
      ...r,
      stage: 'rolling',
    });
  });

  it.each([
    undefined,
    '',
    R1,
    `${R1} soaking`,
    `${R1} soaking yesterday`,
    `${R1} canary 2026-05-01T12:00:00Z`,
    `${R1} stopped 2026-05-01T12:00:00Z`,
  ])('reads %p as no record: a hand edit cannot wedge the wave', (value) => {
    expect(parseStageRecord(value)).toBeUndefined();
  });

  it('patches the stage and the last good revision, each only when given', () => {
    const r: StageRecord = { revision: R1, stage: 'complete', sinceMs: NOW };
    expect(stagePatch(r, R1)).toEqual({
      metadata: { annotations: { [WAVE_STAGE]: formatStageRecord(r), [LAST_GOOD_REVISION]: R1 } },
    });
    expect(stagePatch(r, undefined)).toEqual({
      metadata: { annotations: { [WAVE_STAGE]: formatStageRecord(r) } },
    });
    expect(stagePatch(undefined, undefined)).toEqual({ metadata: { annotations: {} } });
  });

  it('reads the last good revision, trimmed; empty is none', () => {
    expect(readLastGood({ [LAST_GOOD_REVISION]: ` ${R0}\n` })).toBe(R0);
    expect(readLastGood({ [LAST_GOOD_REVISION]: '  ' })).toBeUndefined();
    expect(readLastGood(undefined)).toBeUndefined();
  });
});
