// The wave's stage machine (shared/src/wave-stage.ts), by itself, on owners as the planner
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

import fc from 'fast-check';
import {
  LAST_GOOD_REVISION,
  WAVE_STAGE,
  decideStage,
  defaultConfig,
  formatStageRecord,
  parseStageRecord,
  readLastGood,
  stagePatch,
  type CanaryConfig,
  type GateVerdict,
  type RolloutConfig,
  type StageDecision,
  type StageInput,
  type StageOwner,
  type StageRecord,
} from '../src';

const R0 = '0000000000';
const R1 = '1111111111';
const NOW = Date.parse('2026-05-01T12:00:00Z');
const SOAK = 120;

const PASSED: GateVerdict = { state: 'passed', detail: 'rollout complete, 2 of 2 pods Ready' };
const PENDING: GateVerdict = { state: 'pending', detail: '1 of 2 pods Ready' };
const FAILED: GateVerdict = {
  state: 'failed',
  detail: 'container outrigger-proxy of pod x is CrashLoopBackOff',
};

function rollout(
  canary: Partial<CanaryConfig> = {},
  extra: Partial<RolloutConfig> = {},
): RolloutConfig {
  const base = defaultConfig().rollout;
  return { ...base, canary: { ...base.canary, count: 1, soakSeconds: SOAK, ...canary }, ...extra };
}

function owner(key: string, o: Partial<StageOwner> = {}): StageOwner {
  return {
    key,
    canaryEligible: true,
    canary: false,
    inWave: false,
    gate: undefined,
    candidate: undefined,
    waiting: false,
    busy: false,
    following: false,
    rollingBack: false,
    ...o,
  };
}

/** Due for the revision and free to start, budget and window permitting. */
const outdated = (key: string, o: Partial<StageOwner> = {}) =>
  owner(key, { candidate: 'rollout', ...o });
/** Restarted by this wave as a canary; the gate says how it is doing. */
const canary = (key: string, gate: GateVerdict) =>
  owner(key, { canary: true, inWave: true, gate, following: gate.state === 'pending' });
/** Restarted by this wave past the canary stage. */
const restarted = (key: string, gate: GateVerdict = PASSED) => owner(key, { inWave: true, gate });
const current = (key: string) => owner(key);

function decide(i: Partial<StageInput>): StageDecision {
  return decideStage({
    revision: R1,
    rollout: rollout(),
    record: undefined,
    lastGood: undefined,
    stopped: false,
    nowMs: NOW,
    owners: [],
    ...i,
  });
}

const sorted = (s: ReadonlySet<string>): string[] => [...s].sort();
const soaking = (sinceMs: number, revision = R1): StageRecord => ({
  revision,
  stage: 'soaking',
  sinceMs,
});
const recorded = (stage: StageRecord['stage'], sinceMs = NOW - 3600_000): StageRecord => ({
  revision: R1,
  stage,
  sinceMs,
});

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
      rollback: { keys: ['a', 'b'], to: R0 },
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

// ---------------------------------------------------------------------------------------------
// Properties over random waves.

/**
 * Owners as the planner can present them: the gate is judged exactly for the owners the wave
 * restarted (inWave), and those are never rollout or shed candidates again for the revision;
 * an owner waiting or followed is not a candidate.
 */
const ownerArb = fc
  .record({
    canaryEligible: fc.boolean(),
    canary: fc.boolean(),
    inWave: fc.boolean(),
    gate: fc.constantFrom(PASSED, PENDING, FAILED),
    candidate: fc.constantFrom(undefined, 'rollout', 'shed', 'heal'),
    waiting: fc.boolean(),
    busy: fc.boolean(),
    following: fc.boolean(),
    rollingBack: fc.boolean(),
  })
  .map((o): Omit<StageOwner, 'key'> => {
    const occupied = o.waiting || o.following;
    const candidate = occupied || (o.inWave && o.candidate !== 'heal') ? undefined : o.candidate;
    const waiting = o.waiting && !o.following;
    return {
      ...o,
      gate: o.inWave ? o.gate : undefined,
      candidate,
      waiting,
      // busy (its own rollout under way, a back-off) is a kind of waiting
      busy: waiting && o.busy,
    };
  });

const inputArb: fc.Arbitrary<StageInput> = fc
  .record({
    owners: fc.array(ownerArb, { maxLength: 8 }),
    count: fc.integer({ min: 0, max: 3 }),
    soakSeconds: fc.constantFrom(0, 60, SOAK),
    onFailure: fc.constantFrom('rollback' as const, 'stop' as const),
    record: fc.option(
      fc.record({
        revision: fc.constantFrom(R0, R1),
        stage: fc.constantFrom('soaking' as const, 'rolling' as const, 'complete' as const),
        sinceMs: fc.integer({ min: NOW - 300_000, max: NOW }),
      }),
      { nil: undefined },
    ),
    lastGood: fc.constantFrom(undefined, R0, R1),
    stopped: fc.boolean(),
    nowMs: fc.integer({ min: NOW, max: NOW + 300_000 }),
  })
  .map((g) => ({
    revision: R1,
    rollout: rollout({ count: g.count, soakSeconds: g.soakSeconds }, { onFailure: g.onFailure }),
    record: g.record,
    lastGood: g.lastGood,
    stopped: g.stopped,
    nowMs: g.nowMs,
    owners: g.owners.map((o, i) => ({ key: `shop/Deployment/o${i}`, ...o })),
  }));

/** Facts about an input, stated directly from the rules rather than from the code. */
function factsOf(i: StageInput) {
  const record = i.record?.revision === i.revision ? i.record : undefined;
  const restartedCanaries = i.owners.filter((o) => o.canary && o.inWave);
  const rollouts = i.owners.filter((o) => o.candidate === 'rollout');
  const eligible = rollouts.filter((o) => o.canaryEligible);
  // a canary busy with something that passes by itself (its own rollout, a back-off) is waited
  // for; one waiting on what may never pass (a stalled rollout of its own) is not
  const noCanaryDue = eligible.length === 0 && !i.owners.some((o) => o.busy && o.canaryEligible);
  const soak = i.rollout.canary.soakSeconds * 1000;
  const allPassed = restartedCanaries.every((o) => o.gate?.state === 'passed');
  const soakOver = soak === 0 || (record?.stage === 'soaking' && i.nowMs >= record.sinceMs + soak);
  return { record, restartedCanaries, rollouts, eligible, noCanaryDue, allPassed, soakOver };
}

describe('decideStage: properties', () => {
  it('(a) before the canary stage passed, every rollout that is not a chosen canary is held, and canaries stay within count', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        const { record, restartedCanaries, rollouts, eligible, noCanaryDue, allPassed, soakOver } =
          factsOf(i);
        fc.pre(!i.stopped && record?.stage !== 'rolling' && record?.stage !== 'complete');
        const d = decideStage(i);
        const { count } = i.rollout.canary;
        // Canaries within count: none chosen once the restarted ones reach it.
        expect(d.canaries.size + restartedCanaries.length).toBeLessThanOrEqual(
          Math.max(count, restartedCanaries.length),
        );
        if (restartedCanaries.length >= count) expect(d.canaries.size).toBe(0);
        for (const k of d.canaries) expect(d.held.has(k)).toBe(false);
        const through = rollouts.filter((o) => !d.canaries.has(o.key) && !d.held.has(o.key));
        if (through.length === 0) return;
        // Let through only once the canary stage is over or cannot happen: no canary count, or
        // no owner the selectors name is due (a candidate now, or busy and about to become one).
        const skipped = count === 0 || (restartedCanaries.length === 0 && noCanaryDue);
        const passed =
          restartedCanaries.length > 0 &&
          allPassed &&
          soakOver &&
          (eligible.length === 0 || restartedCanaries.length >= count);
        expect(d.stage).toBe('rolling');
        expect(skipped || passed).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it('(b) only owners matching the canary selectors are chosen, and only rollouts', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        const d = decideStage(i);
        const byKey = new Map(i.owners.map((o) => [o.key, o]));
        for (const k of d.canaries)
          expect(byKey.get(k)).toMatchObject({ canaryEligible: true, candidate: 'rollout' });
        for (const k of d.held) expect(byKey.get(k)?.candidate).toBe('rollout');
      }),
      { numRuns: 500 },
    );
  });

  it('(c) soaking is recorded once, and rolling only after the soak with every canary passed', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        const { record, restartedCanaries, noCanaryDue, allPassed, soakOver } = factsOf(i);
        const d = decideStage(i);
        if (d.record?.stage === 'soaking') {
          expect(record?.stage).not.toBe('soaking');
          expect(d.record.sinceMs).toBe(i.nowMs);
          expect(restartedCanaries.length).toBeGreaterThan(0);
          expect(allPassed).toBe(true);
        }
        if (d.record?.stage === 'rolling') {
          expect(record?.stage === 'rolling' || record?.stage === 'complete').toBe(false);
          const nothingToJudge = restartedCanaries.length === 0 && noCanaryDue;
          expect(nothingToJudge || (allPassed && soakOver)).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('(c) over time: a passing canary soaks from the first look, once, and the wave rolls at since + soak', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 90_000 }), { minLength: 1, maxLength: 12 }),
        fc.constantFrom(60, SOAK),
        (steps, soakSeconds) => {
          const cfg = rollout({ soakSeconds });
          const owners = [canary('a', PASSED), outdated('b')];
          let record: StageRecord | undefined;
          let now = NOW;
          const soaks: number[] = [];
          for (const step of [0, ...steps]) {
            now += step;
            const d = decide({ rollout: cfg, owners, record, nowMs: now });
            if (d.record?.stage === 'soaking') soaks.push(d.record.sinceMs);
            const since = soaks[0] ?? now;
            expect(d.stage).toBe(now >= since + soakSeconds * 1000 ? 'rolling' : 'soaking');
            if (d.stage === 'soaking') expect(d.held.has('b')).toBe(true);
            record = d.record ?? record;
          }
          expect(soaks).toEqual([NOW]);
        },
      ),
    );
  });

  it('(d) a stopped wave rolls back exactly the owners it restarted, and only with rollback and an earlier good revision', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        fc.pre(i.stopped);
        const d = decideStage(i);
        const inWave = i.owners.filter((o) => o.inWave).map((o) => o.key);
        const canRollBack =
          i.rollout.onFailure === 'rollback' &&
          i.lastGood !== undefined &&
          i.lastGood !== i.revision;
        if (canRollBack && inWave.length > 0)
          expect(d.rollback).toEqual({ keys: inWave, to: i.lastGood });
        else expect(d.rollback).toBeUndefined();
        // A stopped wave starts nothing and records nothing.
        expect(d).toMatchObject({ record: undefined, lastGood: undefined });
        expect(d.canaries.size).toBe(0);
        expect(['stopped', 'rolling-back', 'rolled-back']).toContain(d.stage);
      }),
      { numRuns: 500 },
    );
  });

  it('(e) a complete wave records its revision as the last good one, once', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        const d = decideStage(i);
        if (d.stage !== 'complete') return;
        expect(d.lastGood).toBe(i.lastGood === i.revision ? undefined : i.revision);
        const again = decideStage({
          ...i,
          record: d.record ?? i.record,
          lastGood: d.lastGood ?? i.lastGood,
        });
        expect(again).toMatchObject({ stage: 'complete', record: undefined, lastGood: undefined });
      }),
      { numRuns: 500 },
    );
  });

  it('what a decision records, the next decision on the same cluster does not record again', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        const d = decideStage(i);
        const next = decideStage({
          ...i,
          record: d.record ?? i.record,
          lastGood: d.lastGood ?? i.lastGood,
        });
        expect(next.record).toBeUndefined();
        expect(next.lastGood).toBeUndefined();
        expect(next.stage).toBe(d.stage);
      }),
      { numRuns: 500 },
    );
  });
});
