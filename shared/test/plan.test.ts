import {
  COMPLETED_REVISION,
  HEALED_AT,
  HEALED_REVISION,
  NO_REVISION,
  RESTARTED_AT,
  RESTARTED_REVISION,
  RESUME,
  RESUMED_AT,
  WAVE_STAGE,
  WAVE_STOPPED,
  defaultConfig,
  isRecord,
  type Config,
  type NamespaceMeta,
} from '../src';
import {
  assessOwner,
  clearStopPatch,
  completionPatch,
  compareOwners,
  OWNER_STATES,
  ownerKey,
  ownerState,
  planWave,
  readWave,
  restartPatch,
  resumePatch,
  waveStopPatch,
  type OwnerAssessment,
  type OwnerInput,
  type OwnerState,
  type PodCounts,
  type WaveInput,
  type WavePlan,
  type WaveState,
  WEBHOOK_RECHECK_MS,
} from '../src';
import type { Workload } from '../src/rollout-status';

// ---------------------------------------------------------------------------------------------
// Fixtures: workloads as the API returns them, namespaces, and a fixed clock.

const R0 = '0000000000';
const R1 = '1111111111';
const NOW = Date.parse('2025-03-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
const ago = (seconds: number) => iso(NOW - seconds * 1000);

const enabledNs = (name = 'shop'): NamespaceMeta => ({
  name,
  annotations: { 'outrigger.dev/inject': 'enabled' },
});
const plainNs = (name = 'shop'): NamespaceMeta => ({ name });

type Kind = Workload['kind'];
type Status = 'complete' | 'progressing' | 'deadline' | 'on-delete';

interface WorkloadOptions {
  kind?: Kind;
  name?: string;
  namespace?: string;
  /** The revision stamped into the template; null for no stamp. */
  stamp?: string | null;
  /** Annotations and labels of the template beyond the stamp. */
  templateAnnotations?: Record<string, string>;
  templateLabels?: Record<string, string>;
  /** Annotations on the workload's own metadata (our restart records). */
  annotations?: Record<string, string>;
  /** Labels on the workload's own metadata (the completion record). */
  labels?: Record<string, string>;
  status?: Status;
}

function stampOf(
  kind: Kind,
  name: string,
  revision: string | null | undefined,
): { labels: Record<string, string>; annotations: Record<string, string> } {
  if (revision === null || revision === undefined) return { labels: {}, annotations: {} };
  return {
    labels: { 'outrigger.dev/stamped': 'true' },
    annotations: {
      'outrigger.dev/owner-kind': kind,
      'outrigger.dev/owner-name': name,
      'outrigger.dev/config-revision': revision,
    },
  };
}

function workload(o: WorkloadOptions = {}): Workload {
  const kind = o.kind ?? 'Deployment';
  const name = o.name ?? 'web';
  const stamp = stampOf(kind, name, o.stamp === undefined ? R1 : o.stamp);
  const template = {
    metadata: {
      labels: { app: name, ...stamp.labels, ...o.templateLabels },
      annotations: { ...stamp.annotations, ...o.templateAnnotations },
    },
    spec: { containers: [{ name: 'app', image: `${name}:1` }] },
  };
  const status = o.status ?? 'complete';
  // A rollout in progress: the controller has not observed the latest generation yet.
  // A stalled Deployment has observed its spec and reports the stall in a condition.
  const generation = status === 'progressing' ? 3 : 2;
  const metadata = {
    name,
    namespace: o.namespace ?? 'shop',
    generation,
    resourceVersion: '41',
    annotations: { ...o.annotations },
    ...(o.labels ? { labels: { ...o.labels } } : {}),
  };
  switch (kind) {
    case 'Deployment':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: { replicas: 2, template },
        status: {
          observedGeneration: 2,
          replicas: 2,
          updatedReplicas: status === 'deadline' ? 1 : 2,
          availableReplicas: 2,
          conditions:
            status === 'deadline'
              ? [
                  {
                    type: 'Progressing',
                    status: 'False',
                    reason: 'ProgressDeadlineExceeded',
                    lastTransitionTime: ago(30),
                  },
                ]
              : [],
        },
      };
    case 'StatefulSet':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: {
          replicas: 2,
          updateStrategy:
            status === 'on-delete'
              ? { type: 'OnDelete' }
              : { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
          template,
        },
        status: { observedGeneration: 2, replicas: 2, readyReplicas: 2, updatedReplicas: 2 },
      };
    case 'DaemonSet':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: {
          updateStrategy: { type: status === 'on-delete' ? 'OnDelete' : 'RollingUpdate' },
          template,
        },
        status: {
          observedGeneration: 2,
          desiredNumberScheduled: 3,
          updatedNumberScheduled: 3,
          numberAvailable: 3,
        },
      };
  }
}

const order0Revision = (w: Workload): string => w.metadata?.annotations?.[RESTARTED_REVISION] ?? '';

const restarted = (revision: string, secondsAgo: number, extra: Record<string, string> = {}) => ({
  [RESTARTED_REVISION]: revision,
  [RESTARTED_AT]: ago(secondsAgo),
  ...extra,
});

// These tests are about the budget, the order and the records: without a canary stage, which
// shared/test/wave-stage.test.ts covers.
function configWith(rollout: Partial<Config['rollout']> = {}): Config {
  const base = defaultConfig();
  const canary = { ...base.rollout.canary, count: 0 };
  return { ...base, rollout: { ...base.rollout, canary, ...rollout } };
}

const noPods: PodCounts = { escaped: 0, outdated: 0, injected: 2 };

function input(w: Workload, extra: Partial<OwnerInput> = {}): OwnerInput {
  return {
    workload: w,
    namespace: enabledNs(w.metadata?.namespace),
    config: configWith(),
    revision: R1,
    pods: noPods,
    nowMs: NOW,
    ...extra,
  };
}

// ---------------------------------------------------------------------------------------------

describe('ownerState: every state, from the cluster as it is', () => {
  const deadline = configWith({ progressDeadlineSeconds: 600 });
  it.each<[string, OwnerInput, OwnerState]>([
    ['stamped with the current revision, rollout done', input(workload()), 'current'],
    [
      'opted in, never stamped (its pods predate injection)',
      input(workload({ stamp: null })),
      'outdated',
    ],
    ['stamped with an older revision', input(workload({ stamp: R0 })), 'outdated'],
    [
      'stamped current, but some pods run an older revision',
      input(workload(), { pods: { escaped: 0, outdated: 2, injected: 2 } }),
      'outdated',
    ],
    [
      'stamp copied from another owner',
      input(workload({ templateAnnotations: { 'outrigger.dev/owner-name': 'other' } })),
      'outdated',
    ],
    [
      'stamped current, pods escaped injection',
      input(workload(), { pods: { escaped: 1, outdated: 0, injected: 1 } }),
      'escaped',
    ],
    [
      'outdated wins over escaped: a rollout injects those pods too',
      input(workload({ stamp: R0 }), { pods: { escaped: 1, outdated: 0, injected: 1 } }),
      'outdated',
    ],
    [
      'our restart to this revision is rolling',
      input(workload({ annotations: restarted(R1, 60), status: 'progressing' })),
      'rolling',
    ],
    [
      'our restart ran past our deadline',
      input(workload({ annotations: restarted(R1, 700), status: 'progressing' }), {
        config: deadline,
      }),
      'stalled',
    ],
    [
      'our restart: the Deployment reports ProgressDeadlineExceeded',
      input(workload({ annotations: restarted(R1, 60), status: 'deadline' })),
      'stalled',
    ],
    ['our restart finished', input(workload({ annotations: restarted(R1, 60) })), 'current'],
    ['someone else rolls it, nothing due', input(workload({ status: 'progressing' })), 'rolling'],
    [
      'our restart finished long ago, since degraded: not ours to follow',
      input(
        workload({
          annotations: restarted(R1, 7200),
          labels: { [COMPLETED_REVISION]: R1 },
          status: 'progressing',
        }),
      ),
      'rolling',
    ],
    [
      'outdated while its own rollout runs: wait for it',
      input(workload({ stamp: R0, status: 'progressing' })),
      'rolling',
    ],
    [
      'outdated and its own rollout stalled',
      input(workload({ stamp: R0, status: 'deadline' })),
      'stalled',
    ],
    [
      'outdated, our restart to an older revision still rolling: superseded',
      input(workload({ stamp: R0, annotations: restarted(R0, 60), status: 'progressing' })),
      'outdated',
    ],
    [
      'outdated, opted out of automatic restarts',
      input(
        workload({ stamp: R0, templateAnnotations: { 'outrigger.dev/auto-restart': 'disabled' } }),
      ),
      'opted-out',
    ],
    [
      'escaped, opted out of automatic restarts',
      input(workload({ templateAnnotations: { 'outrigger.dev/auto-restart': 'disabled' } }), {
        pods: { escaped: 1, outdated: 0, injected: 0 },
      }),
      'opted-out',
    ],
    [
      'opted out of automatic restarts but current',
      input(workload({ templateAnnotations: { 'outrigger.dev/auto-restart': 'disabled' } })),
      'current',
    ],
    [
      'StatefulSet with OnDelete, outdated',
      input(workload({ kind: 'StatefulSet', stamp: R0, status: 'on-delete' })),
      'on-delete',
    ],
    [
      'DaemonSet with OnDelete, outdated',
      input(workload({ kind: 'DaemonSet', stamp: R0, status: 'on-delete' })),
      'on-delete',
    ],
    [
      'StatefulSet with OnDelete, current',
      input(workload({ kind: 'StatefulSet', status: 'on-delete' })),
      'current',
    ],
    [
      'namespace not opted in',
      input(workload({ stamp: null }), { namespace: plainNs() }),
      'not-enabled',
    ],
    [
      'namespace opted out, sidecars remain, restartOnOptOut off',
      input(workload(), { namespace: plainNs() }),
      'not-enabled',
    ],
    [
      'namespace opted out, sidecars remain, restartOnOptOut on: shed them',
      input(workload(), { namespace: plainNs(), config: configWith({ restartOnOptOut: true }) }),
      'outdated',
    ],
    [
      'namespace opted out, sidecars already shed',
      input(workload(), {
        namespace: plainNs(),
        config: configWith({ restartOnOptOut: true }),
        pods: { escaped: 0, outdated: 0, injected: 0 },
      }),
      'not-enabled',
    ],
    [
      'shedding restart in progress',
      input(workload({ annotations: restarted(NO_REVISION, 60), status: 'progressing' }), {
        namespace: plainNs(),
        config: configWith({ restartOnOptOut: true }),
      }),
      'rolling',
    ],
    [
      'escaped-looking pods where the namespace is not opted in are expected',
      input(workload(), { namespace: plainNs(), pods: { escaped: 3, outdated: 0, injected: 0 } }),
      'not-enabled',
    ],
    [
      'the template label opts it in where the namespace is not',
      input(workload({ stamp: null, templateLabels: { 'outrigger.dev/inject': 'enabled' } }), {
        namespace: plainNs(),
      }),
      'outdated',
    ],
    [
      'the template opts out where the namespace is in',
      input(workload({ stamp: null, templateAnnotations: { 'outrigger.dev/inject': 'disabled' } })),
      'not-enabled',
    ],
    [
      'a system namespace is never in scope, whatever its annotation',
      input(workload({ stamp: null, namespace: 'kube-system' })),
      'not-enabled',
    ],
  ])('%s', (_name, i, expected) => {
    expect(ownerState(i)).toBe(expected);
  });

  it('exports every state for metrics', () => {
    expect([...OWNER_STATES].sort()).toEqual(
      [
        'current',
        'escaped',
        'not-enabled',
        'on-delete',
        'opted-out',
        'outdated',
        'rolling',
        'stalled',
      ].sort(),
    );
  });

  it('targets "none" when shedding sidecars, the revision otherwise', () => {
    const shed = assessOwner(
      input(workload(), { namespace: plainNs(), config: configWith({ restartOnOptOut: true }) }),
    );
    expect(shed).toMatchObject({ target: NO_REVISION, due: { kind: 'shed' } });
    expect(assessOwner(input(workload({ stamp: R0 })))).toMatchObject({
      target: R1,
      due: { kind: 'rollout' },
    });
  });

  it('marks a finished restart of ours as completed until its completion is recorded', () => {
    expect(assessOwner(input(workload({ annotations: restarted(R1, 60) })))).toMatchObject({
      completed: true,
      following: false,
    });
    const recorded = workload({
      annotations: restarted(R1, 60),
      labels: { [COMPLETED_REVISION]: R1 },
    });
    expect(assessOwner(input(recorded))).toMatchObject({ completed: false, following: false });
    // A record of an older restart's completion does not count for this one.
    const older = workload({
      annotations: restarted(R1, 60),
      labels: { [COMPLETED_REVISION]: R0 },
    });
    expect(assessOwner(input(older))).toMatchObject({ completed: true });
  });

  it('dates a deadline stall at the deadline and a Deployment stall at its condition', () => {
    const late = assessOwner(
      input(workload({ annotations: restarted(R1, 700), status: 'progressing' })),
    );
    expect(late.stall).toMatchObject({
      reason: 'deadline-exceeded',
      sinceMs: NOW - 700_000 + 600_000,
    });
    const own = assessOwner(
      input(workload({ annotations: restarted(R1, 60), status: 'deadline' })),
    );
    expect(own.stall).toMatchObject({ reason: 'rollout-stalled', sinceMs: NOW - 30_000 });
  });

  it('applies no deadline when restarted-at cannot be read', () => {
    const w = workload({
      annotations: { [RESTARTED_REVISION]: R1, [RESTARTED_AT]: 'yesterday' },
      status: 'progressing',
    });
    expect(assessOwner(input(w))).toMatchObject({ state: 'rolling', following: true });
  });
});

// ---------------------------------------------------------------------------------------------
// The planner.

const notStopped: WaveState = {
  stopped: undefined,
  resumeRequested: false,
  resumedAtMs: undefined,
};

function plan(owners: OwnerAssessment[], extra: Partial<WaveInput> = {}): WavePlan {
  return planWave({
    owners,
    revision: R1,
    rollout: configWith({ maxConcurrent: 3 }).rollout,
    wave: notStopped,
    nowMs: NOW,
    ...extra,
  });
}

const assess = (w: Workload, extra: Partial<OwnerInput> = {}) => assessOwner(input(w, extra));
const outdated = (namespace: string, name: string, kind: Kind = 'Deployment') =>
  assess(workload({ namespace, name, kind, stamp: R0 }));
const rollingOurs = (namespace: string, name: string) =>
  assess(workload({ namespace, name, annotations: restarted(R1, 60), status: 'progressing' }));
/** The value, or a test failure naming what was missing. */
function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`expected ${what}`);
  return value;
}
const keys = (p: WavePlan) => p.restart.map((r) => ownerKey(r.owner));
const entry = (p: WavePlan, key: string) => p.report.find((e) => ownerKey(e.owner) === key);

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

/** What the API server does with a JSON merge patch (RFC 7386), and the generation bump. */
function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

function write(w: Workload, patch: Record<string, unknown>): Workload {
  const next = applyMergePatch(w, patch) as Workload;
  const changed = JSON.stringify(next.spec) !== JSON.stringify(w.spec);
  const generation = (w.metadata?.generation ?? 0) + (changed ? 1 : 0);
  return { ...next, metadata: { ...next.metadata, generation } };
}

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

// ---------------------------------------------------------------------------------------------
// The writes that record the plan in the cluster.

describe('restartPatch', () => {
  const order = (kind: 'rollout' | 'heal' | 'shed', revision = R1) => ({
    owner: { namespace: 'shop', kind: 'Deployment' as const, name: 'web' },
    kind,
    revision,
  });

  it('a rollout stamps the new revision and records the restart on the workload', () => {
    const w = workload({ stamp: R0, labels: { [COMPLETED_REVISION]: R0 } });
    expect(restartPatch({ workload: w, order: order('rollout'), nowMs: NOW })).toEqual({
      metadata: {
        resourceVersion: '41',
        labels: { [COMPLETED_REVISION]: null },
        annotations: {
          [RESTARTED_REVISION]: R1,
          [RESTARTED_AT]: iso(NOW),
        },
      },
      spec: {
        template: {
          metadata: {
            labels: { 'outrigger.dev/stamped': 'true' },
            annotations: {
              'outrigger.dev/owner-kind': 'Deployment',
              'outrigger.dev/owner-name': 'web',
              'outrigger.dev/config-revision': R1,
            },
          },
        },
      },
    });
  });

  it('a rollout whose stamp is already current nudges the template so the pods roll', () => {
    const w = workload();
    const p = restartPatch({ workload: w, order: order('rollout'), nowMs: NOW });
    expect(write(w, p).metadata?.generation).toBe(3);
  });

  it('a heal also records the heal, and always changes the template', () => {
    const w = workload();
    const p = restartPatch({ workload: w, order: order('heal'), nowMs: NOW });
    expect(p.metadata).toMatchObject({
      annotations: { [HEALED_REVISION]: R1, [HEALED_AT]: iso(NOW), [RESTARTED_REVISION]: R1 },
    });
    expect(write(w, p).metadata?.generation).toBe(3);
  });

  it('shedding takes the stamp off the template', () => {
    const w = workload();
    const after = write(
      w,
      restartPatch({ workload: w, order: order('shed', NO_REVISION), nowMs: NOW }),
    );
    const meta = (after.spec?.template as { metadata: { labels: object; annotations: object } })
      .metadata;
    expect(meta.labels).toEqual({ app: 'web' });
    expect(Object.keys(meta.annotations)).toEqual([]);
    expect(after.metadata?.annotations?.[RESTARTED_REVISION]).toBe(NO_REVISION);
  });

  it('shedding an unstamped template still changes it', () => {
    const w = workload({ stamp: null });
    const p = restartPatch({ workload: w, order: order('shed', NO_REVISION), nowMs: NOW });
    expect(write(w, p).metadata?.generation).toBe(3);
  });
});

describe('the wave record on the ConfigMap', () => {
  it('reads nothing as a running wave', () => {
    expect(readWave(undefined)).toEqual(notStopped);
    expect(readWave({ [RESUME]: '' })).toEqual(notStopped);
  });

  it('round-trips a stop', () => {
    const patch = waveStopPatch({
      stop: {
        owner: { namespace: 'a', kind: 'Deployment', name: 'bad' },
        reason: 'deadline-exceeded',
        detail: 'not complete 600s after the restart',
      },
      revision: R1,
      nowMs: NOW,
    });
    const annotations = (patch.metadata as { annotations: Record<string, string> }).annotations;
    const value = present(annotations[WAVE_STOPPED], 'the stop annotation');
    expect(value).toBe(
      `${R1} a/Deployment/bad deadline-exceeded at ${iso(NOW)}: not complete 600s after the restart`,
    );
    expect(readWave({ [WAVE_STOPPED]: value }).stopped).toEqual({
      revision: R1,
      reason: `a/Deployment/bad deadline-exceeded at ${iso(NOW)}: not complete 600s after the restart`,
    });
  });

  it('a resume clears the stop and the request, and remembers when', () => {
    expect(resumePatch(NOW)).toEqual({
      metadata: {
        annotations: {
          [WAVE_STOPPED]: null,
          [RESUME]: null,
          [RESUMED_AT]: iso(NOW),
          [WAVE_STAGE]: null,
        },
      },
    });
    expect(readWave({ [RESUMED_AT]: iso(NOW) }).resumedAtMs).toBe(NOW);
    expect(readWave({ [RESUMED_AT]: 'garbage' }).resumedAtMs).toBeUndefined();
  });
});
