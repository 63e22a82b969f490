// judgeGate: the health gate's verdict on the owners a wave restarted, and what it counts.

import fc from 'fast-check';
import {
  judgeGate,
  countRevisionPod,
  proxyTrouble,
  type GateInput,
  type GateState,
  type PodLike,
  type RevisionPods,
  type RolloutStatus,
} from '../src';

import { PROXY } from './gate-fixtures';

const complete: RolloutStatus = {
  state: 'complete',
  detail: 'deployment "web" successfully rolled out',
};
const progressing: RolloutStatus = {
  state: 'progressing',
  reason: 'updated-replicas',
  detail: 'waiting for deployment "web" rollout to finish: 1 of 2 updated replicas are available',
};
const stalled: RolloutStatus = {
  state: 'stalled',
  reason: 'ProgressDeadlineExceeded',
  detail: 'deployment "web" exceeded its progress deadline',
};
const onDelete: RolloutStatus = { state: 'unsupported', strategy: 'OnDelete', detail: 'OnDelete' };

const trouble = {
  pod: 'web-1',
  container: PROXY,
  reason: 'CrashLoopBackOff',
  restarts: 4,
  message: 'back-off 1m20s',
};
const pods = (total: number, ready: number, t?: typeof trouble): RevisionPods => ({
  total,
  ready,
  trouble: t,
  unready: [],
});
const stall = { detail: 'not complete 600s after the restart' };

function gate(input: Partial<GateInput> = {}): GateInput {
  return {
    rollout: complete,
    stall: undefined,
    pods: pods(2, 2),
    podsSynced: true,
    desired: 2,
    ...input,
  };
}

describe('judgeGate', () => {
  it.each<[string, GateInput, GateState, string]>([
    [
      'complete, every pod Ready, proxy fine',
      gate(),
      'passed',
      'rollout complete, 2 of 2 pods Ready, proxy not restarted',
    ],
    [
      'OnDelete owner with every pod Ready',
      gate({ rollout: onDelete }),
      'passed',
      'rollout complete, 2 of 2 pods Ready, proxy not restarted',
    ],
    [
      'a proxy in trouble fails the gate',
      gate({ pods: pods(2, 1, trouble) }),
      'failed',
      `container ${PROXY} of pod web-1 is CrashLoopBackOff, restarted 4 times: back-off 1m20s`,
    ],
    // A crash is a fact: waiting for the rollout or the pod list would only delay the stop.
    [
      'trouble fails the gate while the rollout is still going',
      gate({ rollout: progressing, pods: pods(2, 0, trouble) }),
      'failed',
      `container ${PROXY} of pod web-1 is CrashLoopBackOff, restarted 4 times: back-off 1m20s`,
    ],
    [
      'trouble fails the gate before the pod list is synced',
      gate({ podsSynced: false, pods: pods(1, 0, trouble) }),
      'failed',
      `container ${PROXY} of pod web-1 is CrashLoopBackOff, restarted 4 times: back-off 1m20s`,
    ],
    [
      'a stall of our restart fails the gate',
      gate({ rollout: stalled, stall }),
      'failed',
      stall.detail,
    ],
    ['a stall fails the gate even with every pod Ready', gate({ stall }), 'failed', stall.detail],
    [
      'the rollout is progressing: pending',
      gate({ rollout: progressing }),
      'pending',
      `rollout not complete: ${progressing.detail}`,
    ],
    // Without a stall of ours (the deadline is ours to judge), a stalled status is not yet a failure.
    [
      'the rollout reports a stall, no stall of ours: pending',
      gate({ rollout: stalled }),
      'pending',
      `rollout not complete: ${stalled.detail}`,
    ],
    [
      'the pods are not listed yet: pending, never passed',
      gate({ podsSynced: false }),
      'pending',
      'the pods at the revision are not listed yet',
    ],
    ['a pod not Ready: pending', gate({ pods: pods(3, 2) }), 'pending', '2 of 3 pods Ready'],
    ['no pod Ready: pending', gate({ pods: pods(2, 0) }), 'pending', '0 of 2 pods Ready'],
  ])('%s', (_name, input, state, detail) => {
    const v = judgeGate(input);
    expect(v.state).toBe(state);
    expect(v.detail).toBe(detail);
    // The trouble travels with a failure for the Event and the stop reason.
    expect(v.trouble).toEqual(input.pods?.trouble);
  });

  it('property: never passes on missing data, with trouble, or with a stall', () => {
    const rollout = fc.constantFrom(complete, progressing, stalled, onDelete);
    const revisionPods = fc
      .tuple(fc.nat(5), fc.nat(5), fc.boolean())
      .map(([total, notReady, t]) =>
        pods(total, Math.max(0, total - notReady), t ? trouble : undefined),
      );
    fc.assert(
      fc.property(
        fc.record({
          r: rollout,
          stalls: fc.boolean(),
          p: revisionPods,
          synced: fc.boolean(),
          desired: fc.nat(3),
        }),
        ({ r, stalls, p, synced, desired }) => {
          const v = judgeGate({
            rollout: r,
            stall: stalls ? stall : undefined,
            pods: p,
            podsSynced: synced,
            desired,
          });
          const settled = r.state === 'complete' || r.state === 'unsupported';
          // every pod seen Ready, and at least one when the owner wants any: a proxy was seen
          const healthy = p.ready >= p.total && (desired === 0 || p.ready > 0);
          const expected: GateState =
            p.trouble || stalls ? 'failed' : settled && synced && healthy ? 'passed' : 'pending';
          expect(v.state).toBe(expected);
        },
      ),
    );
  });
});

describe('what the gate counts', () => {
  const at = (name: string, status: Record<string, unknown>): PodLike => ({
    metadata: { name },
    status,
  });
  const names = { proxy: 'outrigger-proxy', init: 'outrigger-init' };

  it('leaves out pods that ended (evicted, completed)', () => {
    const evicted = at('gone', { phase: 'Failed', reason: 'Evicted' });
    const ready = at('up', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] });
    const counted = [evicted, ready].reduce<RevisionPods | undefined>(
      (c, p) => countRevisionPod(c, p, names),
      undefined,
    );
    expect(counted).toEqual({ total: 1, ready: 1, trouble: undefined, unready: [] });
  });

  it('judges the init container injection adds too, not the application', () => {
    const pulling = at('p', {
      initContainerStatuses: [
        {
          name: 'outrigger-init',
          restartCount: 0,
          state: { waiting: { reason: 'ImagePullBackOff' } },
        },
      ],
      containerStatuses: [{ name: 'app', restartCount: 4, state: { running: {} } }],
    });
    expect(proxyTrouble(pulling, names.proxy, names.init)).toMatchObject({
      container: 'outrigger-init',
      reason: 'ImagePullBackOff',
    });
    expect(proxyTrouble(pulling, names.proxy)).toBeUndefined();
  });
});
