// ownerState and assessOwner: every state an owner can be in, read from the cluster as it is.

import {
  assessOwner,
  COMPLETED_REVISION,
  NO_REVISION,
  OWNER_STATES,
  ownerState,
  RESTARTED_AT,
  RESTARTED_REVISION,
  type OwnerInput,
  type OwnerState,
} from '../src';
import { R0, R1, NOW, plainNs, workload, restarted, configWith, input } from './owner-fixtures';

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
