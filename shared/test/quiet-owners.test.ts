// The controller plans a wave with planFleet, over the owners that are not quiet, and keeps the
// quiet ones' assessments until their inputs change: that is what makes one owner's event cost
// the same in a cluster of ten owners as in one of ten thousand. It is only sound if leaving the
// quiet owners out changes nothing the planner decides. This checks it over random fleets and
// wave states, including assessments no real owner could produce.

import fc from 'fast-check';
import {
  NO_REVISION,
  OWNER_STATES,
  planFleet,
  quietness,
  mustParseConfig,
  ownerKey,
  planWave,
  type OwnerAssessment,
  type WaveInput,
  type WavePlan,
} from '../src';

const R0 = '0000000000';
const R1 = '1111111111';

/** A StatefulSet's rollback from R1 left pod db-1 not Ready. */
const STUCK = {
  from: R1,
  pods: [{ name: 'db-1', uid: 'u1', resourceVersion: '7' }],
  next: { name: 'db-1', uid: 'u1', resourceVersion: '7' },
  detail: 'pod db-1 not Ready on R1',
};
const NOW = Date.parse('2026-05-01T12:00:00Z');

const time = fc.integer({ min: NOW - 600_000, max: NOW + 600_000 });
const detail = fc.constantFrom('a', 'b');

const rolloutStatus = fc.constantFrom(
  { state: 'complete' as const, detail: 'done' },
  { state: 'progressing' as const, reason: 'updated-replicas' as const, detail: 'rolling' },
  {
    state: 'stalled' as const,
    reason: 'ProgressDeadlineExceeded' as const,
    detail: 'stalled',
  },
);

const anyOwner = fc.record({
  state: fc.constantFrom(...OWNER_STATES),
  detail,
  target: fc.constantFrom(R1, R1, NO_REVISION),
  due: fc.option(
    fc.record({ kind: fc.constantFrom('rollout', 'heal', 'shed', 'rollback' as const), detail }),
    { nil: undefined },
  ),
  inFlight: fc.boolean(),
  following: fc.boolean(),
  completed: fc.boolean(),
  stall: fc.option(
    fc.record({
      reason: fc.constantFrom('rollout-stalled' as const, 'deadline-exceeded' as const),
      sinceMs: time,
      detail,
    }),
    { nil: undefined },
  ),
  deadlineAtMs: fc.option(time, { nil: undefined }),
  restarted: fc.option(
    fc.record({
      revision: fc.constantFrom(R0, R1, NO_REVISION),
      atMs: fc.option(time, { nil: undefined }),
      completed: fc.boolean(),
    }),
    { nil: undefined },
  ),
  healed: fc.option(
    fc.record({ revision: fc.constantFrom(R0, R1), atMs: fc.option(time, { nil: undefined }) }),
    { nil: undefined },
  ),
  rollout: rolloutStatus,
  pinned: fc.constantFrom(undefined, R0, R1),
  canaryEligible: fc.boolean(),
  canary: fc.boolean(),
  rolledBackFrom: fc.constantFrom(undefined, R0, R1),
  revisionPods: fc.option(
    fc.record({
      total: fc.integer({ min: 0, max: 3 }),
      ready: fc.integer({ min: 0, max: 3 }),
      trouble: fc.constantFrom(undefined, {
        pod: 'p',
        container: 'outrigger-proxy',
        reason: 'CrashLoopBackOff',
        restarts: 3,
        message: 'exit 3',
      }),
      unready: fc.constant([]),
    }),
    { nil: undefined },
  ),
  desiredPods: fc.integer({ min: 0, max: 3 }),
  autoRestartDisabled: fc.boolean(),
  stuck: fc.constantFrom(undefined, STUCK, { ...STUCK, next: undefined }),
  forced: fc.constantFrom(undefined, { from: R1, pods: ['db-1'], atMs: 0 }),
});

/** Owners shaped like the quiet ones a real cluster is full of, and their near misses. */
const quietish = anyOwner.map((o) => ({
  ...o,
  state: o.state === 'outdated' ? ('current' as const) : o.state,
  due: undefined,
  inFlight: false,
  following: false,
  completed: false,
  stall: undefined,
}));

/** Owners a completed wave restarted, quiet apart from that. */
const settledish = quietish.map((o) => ({
  ...o,
  target: R1,
  pinned: R1,
  restarted: { revision: R1, atMs: o.restarted?.atMs, completed: true },
}));

const fleet = fc
  .array(fc.oneof(anyOwner, quietish, quietish, settledish), { maxLength: 12 })
  .map((owners) =>
    owners.map((o, i): OwnerAssessment => ({
      ...o,
      owner: { namespace: i % 2 ? 'shop' : 'web', kind: 'Deployment', name: `o${i}` },
    })),
  );

const inputArb = fc.record({
  owners: fleet,
  mode: fc.constantFrom('auto', 'auto', 'manual', 'dry-run'),
  maxConcurrent: fc.integer({ min: 1, max: 3 }),
  count: fc.integer({ min: 0, max: 2 }),
  soakSeconds: fc.constantFrom(0, 120),
  onFailure: fc.constantFrom('rollback', 'stop'),
  stopped: fc.option(
    fc.record({ revision: fc.constantFrom(R0, R1), reason: fc.constant('o1 stopped') }),
    { nil: undefined },
  ),
  resumeRequested: fc.boolean(),
  resumedAtMs: fc.option(time, { nil: undefined }),
  stage: fc.option(
    fc.record({
      revision: fc.constantFrom(R0, R1, R1),
      stage: fc.constantFrom('soaking' as const, 'rolling' as const, 'complete' as const),
      sinceMs: time,
    }),
    { nil: undefined },
  ),
  lastGood: fc.constantFrom(undefined, R0, R1),
  nowMs: time,
  webhookReady: fc.boolean(),
  podsSynced: fc.boolean(),
  backingOff: fc.array(fc.integer({ min: 0, max: 11 }), { maxLength: 3 }),
});

const configs = new Map<string, WaveInput['rollout']>();
function rolloutOf(g: {
  mode: string;
  maxConcurrent: number;
  count: number;
  soakSeconds: number;
  onFailure: string;
}): WaveInput['rollout'] {
  const key = JSON.stringify(g);
  const known = configs.get(key);
  if (known) return known;
  const rollout = mustParseConfig(
    [
      'rollout:',
      `  mode: ${g.mode}`,
      `  maxConcurrent: ${g.maxConcurrent}`,
      `  onFailure: ${g.onFailure}`,
      '  canary:',
      `    count: ${g.count}`,
      `    soakSeconds: ${g.soakSeconds}`,
    ].join('\n'),
  ).rollout;
  configs.set(key, rollout);
  return rollout;
}

/** What a plan decides, apart from the report entries of the owners left out. */
function decisions(p: WavePlan) {
  return { ...p, report: undefined };
}

const classes = (owners: readonly OwnerAssessment[]) => ({
  active: owners.filter((a) => quietness(a) === 'active'),
  inWave: owners.filter((a) => quietness(a) === 'in-wave'),
});

describe('planFleet: leaving quiet owners out changes no decision of the planner', () => {
  it('plans the same restarts, writes, stage and recheck, and reports the others alike', () => {
    fc.assert(
      fc.property(inputArb, (g) => {
        const input: WaveInput = {
          owners: g.owners,
          revision: R1,
          rollout: rolloutOf(g),
          wave: {
            stopped: g.stopped && { ...g.stopped },
            resumeRequested: g.resumeRequested,
            resumedAtMs: g.resumedAtMs,
            stage: g.stage,
            lastGood: g.lastGood,
          },
          nowMs: g.nowMs,
          webhookReady: g.webhookReady,
          podsSynced: g.podsSynced,
          backingOff: new Set(g.backingOff.map((i) => `shop/Deployment/o${i}`)),
        };
        const whole = planWave(input);
        const part = planFleet(input, classes(g.owners));
        expect(decisions(part)).toEqual(decisions(whole));
        const activeKeys = new Set(part.report.map((e) => ownerKey(e.owner)));
        expect(part.report).toEqual(whole.report.filter((e) => activeKeys.has(ownerKey(e.owner))));
        for (const a of g.owners)
          if (quietness(a) === 'active') expect(activeKeys.has(ownerKey(a.owner))).toBe(true);
        for (const e of whole.report)
          if (!activeKeys.has(ownerKey(e.owner))) {
            expect(e.action).toBe('none');
            expect(e.gate).toBeUndefined();
          }
      }),
      { numRuns: 3000 },
    );
  });

  it('is not vacuous: the fleets have owners of each class, and settled waves occur', () => {
    const sample = fc.sample(fleet, 300).flat();
    for (const q of ['quiet', 'in-wave', 'active'] as const)
      expect(sample.filter((a) => quietness(a) === q).length).toBeGreaterThan(50);
    const inputs = fc.sample(inputArb, 300);
    const settled = inputs.filter(
      (g) => g.stage?.revision === R1 && g.stage.stage === 'complete' && !g.resumeRequested,
    );
    expect(settled.length).toBeGreaterThan(10);
  });
});
