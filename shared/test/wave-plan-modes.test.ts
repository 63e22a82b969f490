// planWave beyond the budget: the modes, healing escaped pods, owners only reported, a stop of
// another revision, and when to look again.

import {
  clearStopPatch,
  completionPatch,
  HEALED_AT,
  HEALED_REVISION,
  NO_REVISION,
  readWave,
  restartPatch,
  RESUME,
  WAVE_STOPPED,
  WEBHOOK_RECHECK_MS,
  type OwnerAssessment,
  type PodCounts,
  type WaveState,
} from '../src';
import type { Workload } from '../src/rollout/rollout-status';
import {
  R0,
  R1,
  NOW,
  ago,
  plainNs,
  workload,
  order0Revision,
  restarted,
  configWith,
  plan,
  assess,
  outdated,
  rollingOurs,
  present,
  write,
} from './owner-fixtures';

describe('planWave: modes', () => {
  const owners = () => [
    rollingOurs('a', 'busy'),
    assess(workload({ namespace: 'a', name: 'finished', annotations: restarted(R1, 60) })),
    outdated('b', 'one'),
    outdated('c', 'two'),
    outdated('d', 'three'),
  ];
  const rollout = (mode: 'auto' | 'manual' | 'dry-run') =>
    configWith({ mode, maxConcurrent: 3 }).rollout;

  it('auto restarts and records', () => {
    const p = plan(owners(), { rollout: rollout('auto') });
    expect(p.restart).toHaveLength(2);
    expect(p.complete).toHaveLength(1);
  });

  it('manual writes nothing and reports every due restart for `outrigger restart`', () => {
    const p = plan(owners(), { rollout: rollout('manual') });
    expect(p).toMatchObject({ restart: [], complete: [], stop: undefined, resume: false });
    expect(p.report.filter((e) => e.reason === 'manual-mode').map((e) => e.owner.name)).toEqual([
      'one',
      'two',
      'three',
    ]);
  });

  it('dry-run writes nothing and reports what auto would do', () => {
    const auto = plan(owners(), { rollout: rollout('auto') });
    const dry = plan(owners(), { rollout: rollout('dry-run') });
    expect(dry).toMatchObject({ restart: [], complete: [], stop: undefined, resume: false });
    expect(dry.report).toEqual(auto.report);
  });

  it('manual and dry-run neither stop nor consume a resume', () => {
    const stalled = assess(
      workload({ namespace: 'a', name: 'bad', annotations: restarted(R1, 60), status: 'deadline' }),
    );
    const wave = readWave({ [RESUME]: 'yes' });
    for (const mode of ['manual', 'dry-run'] as const) {
      const p = plan([stalled], { rollout: rollout(mode), wave });
      expect(p.stop).toBeUndefined();
      expect(p.resume).toBe(false);
    }
  });
});

describe('planWave: healing escaped pods, once per revision, with back-off', () => {
  const escapedPods: PodCounts = { escaped: 2, outdated: 0, injected: 1 };
  const escapedOwner = (annotations: Record<string, string> = {}, cfg = configWith()) =>
    assess(workload({ namespace: 'a', name: 'leaky', annotations }), {
      pods: escapedPods,
      config: cfg,
    });

  it('heals an owner with escaped pods', () => {
    const p = plan([escapedOwner()]);
    expect(p.restart).toEqual([
      { owner: { namespace: 'a', kind: 'Deployment', name: 'leaky' }, kind: 'heal', revision: R1 },
    ]);
  });

  it('never heals twice at the same revision: healing did not help', () => {
    const p = plan([escapedOwner({ [HEALED_REVISION]: R1, [HEALED_AT]: ago(3600) })]);
    expect(p.restart).toEqual([]);
    expect(p.report[0]).toMatchObject({
      state: 'escaped',
      action: 'skip',
      reason: 'heal-did-not-help',
    });
  });

  it('waits out the back-off after a heal at an older revision', () => {
    const p = plan([escapedOwner({ [HEALED_REVISION]: R0, [HEALED_AT]: ago(100) })]);
    expect(p.restart).toEqual([]);
    expect(p.report[0]).toMatchObject({ action: 'wait', reason: 'heal-backoff' });
    expect(p.recheckAtMs).toBe(NOW - 100_000 + 300_000);
  });

  it('heals again at a new revision once the back-off has passed', () => {
    const p = plan([escapedOwner({ [HEALED_REVISION]: R0, [HEALED_AT]: ago(301) })]);
    expect(p.restart).toHaveLength(1);
  });

  it('holds a heal while the webhook is not answering: the new pods would escape too', () => {
    const p = plan([escapedOwner()], { webhookReady: false });
    expect(p.restart).toEqual([]);
    expect(p.report[0]).toMatchObject({ action: 'wait', reason: 'webhook-unavailable' });
    expect(p.recheckAtMs).toBe(NOW + WEBHOOK_RECHECK_MS);
  });

  it('a rollout does not wait for the webhook: its pods are held by the template stamp', () => {
    const p = plan([outdated('a', 'app')], { webhookReady: false });
    expect(p.restart).toHaveLength(1);
  });

  it('reports and leaves alone when healing is off', () => {
    const p = plan([escapedOwner({}, configWith({ healEscapedPods: false }))], {
      rollout: configWith({ healEscapedPods: false }).rollout,
    });
    expect(p.restart).toEqual([]);
    expect(p.report[0]).toMatchObject({ action: 'skip', reason: 'heal-disabled' });
  });

  it('a heal in flight is followed like any restart', () => {
    const inFlight = assess(
      workload({
        namespace: 'a',
        name: 'leaky',
        status: 'progressing',
        annotations: { ...restarted(R1, 30), [HEALED_REVISION]: R1, [HEALED_AT]: ago(30) },
      }),
      { pods: escapedPods },
    );
    expect(plan([inFlight]).report[0]).toMatchObject({ state: 'rolling', action: 'follow' });
  });
});

describe('planWave: reported, never restarted', () => {
  it.each<[string, OwnerAssessment, string, string]>([
    [
      'opted out of automatic restarts',
      assess(
        workload({ stamp: R0, templateAnnotations: { 'outrigger.dev/auto-restart': 'disabled' } }),
      ),
      'opted-out',
      'auto-restart-disabled',
    ],
    [
      'OnDelete StatefulSet',
      assess(workload({ kind: 'StatefulSet', stamp: R0, status: 'on-delete' })),
      'on-delete',
      'on-delete',
    ],
  ])('%s', (_name, owner, state, reason) => {
    const p = plan([owner]);
    expect(p.restart).toEqual([]);
    expect(p.report[0]).toMatchObject({ state, action: 'skip', reason });
  });

  it('reports current and not-enabled owners with no action', () => {
    const p = plan([assess(workload()), assess(workload({ name: 'x' }), { namespace: plainNs() })]);
    expect(p.report.map((e) => [e.state, e.action])).toEqual([
      ['current', 'none'],
      ['not-enabled', 'none'],
    ]);
  });

  it('sheds sidecars from an opted-out namespace, once', () => {
    const cfg = configWith({ restartOnOptOut: true });
    const w = workload();
    const first = plan([assess(w, { namespace: plainNs(), config: cfg })]);
    expect(first.restart).toEqual([
      {
        owner: { namespace: 'shop', kind: 'Deployment', name: 'web' },
        kind: 'shed',
        revision: NO_REVISION,
      },
    ]);
    const after = write(
      w,
      restartPatch({ workload: w, order: present(first.restart[0], 'a restart'), nowMs: NOW }),
    );
    const done = { ...after, status: { ...after.status, observedGeneration: 3 } } as Workload;
    const recorded = write(done, completionPatch(order0Revision(done)));
    // A pod that kept its sidecar (say, it opts in by label) must not cause a loop.
    const again = plan([assess(recorded, { namespace: plainNs(), config: cfg })]);
    expect(again.restart).toEqual([]);
    expect(again.report[0]).toMatchObject({ reason: 'already-restarted' });
  });
});

describe('planWave: a stop of another revision', () => {
  const stoppedAt = (revision: string): WaveState => ({
    stopped: { revision, reason: 'a/Deployment/x rollout-stalled' },
    resumeRequested: false,
    resumedAtMs: undefined,
  });

  it('is lifted by the new revision and removed, so a rollback to it is not stopped', () => {
    const p = plan([outdated('a', 'app')], { wave: stoppedAt(R0) });
    expect(p).toMatchObject({ stopped: false, clearStop: true });
    expect(p.restart).toHaveLength(1);
    expect(clearStopPatch()).toEqual({ metadata: { annotations: { [WAVE_STOPPED]: null } } });
  });

  it('is left alone when it names this revision, or when the mode writes nothing', () => {
    expect(plan([outdated('a', 'app')], { wave: stoppedAt(R1) })).toMatchObject({
      stopped: true,
      clearStop: false,
    });
    const manual = configWith({ mode: 'manual' }).rollout;
    expect(plan([], { wave: stoppedAt(R0), rollout: manual }).clearStop).toBe(false);
  });
});

describe('planWave: when to look again', () => {
  it('is the earliest deadline of a followed rollout', () => {
    const p = plan([rollingOurs('a', 'x')], {
      rollout: configWith({ progressDeadlineSeconds: 600 }).rollout,
    });
    expect(p.recheckAtMs).toBe(NOW - 60_000 + 600_000 + 1);
  });

  it('is undefined when nothing waits on the clock', () => {
    expect(plan([assess(workload())]).recheckAtMs).toBeUndefined();
  });
});
