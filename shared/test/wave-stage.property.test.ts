// decideStage's properties over random waves: what any stage decision must keep.

import fc from 'fast-check';
import { decideStage, type StageInput, type StageOwner, type StageRecord } from '../src';

import {
  R0,
  R1,
  NOW,
  SOAK,
  PASSED,
  PENDING,
  FAILED,
  rollout,
  outdated,
  canary,
  decide,
} from './wave-stage-fixtures';

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
    autoRestartDisabled: fc.boolean(),
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

  it('(d) a stopped wave rolls back exactly the owners it restarted whose restarts are not disabled, and only with rollback and an earlier good revision', () => {
    fc.assert(
      fc.property(inputArb, (i) => {
        fc.pre(i.stopped);
        const d = decideStage(i);
        const inWave = i.owners.filter((o) => o.inWave);
        const keys = inWave.filter((o) => !o.autoRestartDisabled).map((o) => o.key);
        const kept = inWave.filter((o) => o.autoRestartDisabled).map((o) => o.key);
        const canRollBack =
          i.rollout.onFailure === 'rollback' &&
          i.lastGood !== undefined &&
          i.lastGood !== i.revision;
        if (canRollBack && inWave.length > 0)
          expect(d.rollback).toEqual({ keys, to: i.lastGood, kept });
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
