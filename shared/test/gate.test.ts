// The health gate (shared/src/gate.ts) an owner restarted by a wave must pass before the wave
// goes on. What it reads is the pod status the kubelet writes: the proxy is an init container
// with restartPolicy Always (a native sidecar) or a regular container, so its status is in
// initContainerStatuses or containerStatuses. The rules: the proxy is in trouble when it waits
// in a back-off (it will not come up by itself) or has restarted at all; other containers'
// troubles are not the proxy's; trouble or a stall fails the gate; anything not yet known or
// not yet Ready keeps it pending; it passes only on a complete rollout with every pod Ready.

import fc from 'fast-check';
import {
  BACKOFF_REASONS,
  describeTrouble,
  isPodReady,
  judgeGate,
  countRevisionPod,
  proxyTrouble,
  type GateInput,
  type GateState,
  type PodLike,
  type RevisionPods,
  type RolloutStatus,
} from '../src';

const PROXY = 'outrigger-proxy';

type Status = Record<string, unknown>;

/** A container status as the kubelet writes it. */
function status(
  name: string,
  o: {
    waiting?: { reason: string; message?: string };
    restartCount?: number;
    lastTerminated?: { reason?: string; exitCode?: number };
  } = {},
): Status {
  return {
    name,
    image: `${name}:1`,
    ready: o.waiting === undefined,
    restartCount: o.restartCount ?? 0,
    state: o.waiting ? { waiting: o.waiting } : { running: { startedAt: '2026-05-01T12:00:00Z' } },
    ...(o.lastTerminated ? { lastState: { terminated: o.lastTerminated } } : { lastState: {} }),
  };
}

function pod(
  name: string,
  s: { init?: Status[]; containers?: Status[]; ready?: boolean } = {},
): PodLike {
  return {
    metadata: { name, namespace: 'shop' },
    status: {
      phase: 'Running',
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'ContainersReady', status: s.ready === false ? 'False' : 'True' },
        { type: 'Ready', status: s.ready === false ? 'False' : 'True' },
      ],
      ...(s.init ? { initContainerStatuses: s.init } : {}),
      ...(s.containers ? { containerStatuses: s.containers } : {}),
    },
  };
}

const crashLoop = {
  waiting: {
    reason: 'CrashLoopBackOff',
    message: 'back-off 1m20s restarting failed container=outrigger-proxy pod=web-1_shop',
  },
  restartCount: 4,
  lastTerminated: { reason: 'Error', exitCode: 1 },
};
const app = status('app');
const init = status('outrigger-init');

describe('proxyTrouble: what is wrong with the proxy in one pod', () => {
  it.each<[string, PodLike, ReturnType<typeof proxyTrouble>]>([
    [
      'a native sidecar in CrashLoopBackOff (initContainerStatuses)',
      pod('web-1', { init: [init, status(PROXY, crashLoop)], containers: [app] }),
      {
        pod: 'web-1',
        container: PROXY,
        reason: 'CrashLoopBackOff',
        restarts: 4,
        message: crashLoop.waiting.message,
      },
    ],
    [
      'a classic sidecar in CrashLoopBackOff (containerStatuses)',
      pod('web-2', { init: [init], containers: [status(PROXY, crashLoop), app] }),
      {
        pod: 'web-2',
        container: PROXY,
        reason: 'CrashLoopBackOff',
        restarts: 4,
        message: crashLoop.waiting.message,
      },
    ],
    [
      'CrashLoopBackOff without a message: the last exit explains it',
      pod('web-3', {
        init: [
          status(PROXY, {
            waiting: { reason: 'CrashLoopBackOff' },
            restartCount: 2,
            lastTerminated: { reason: 'Error', exitCode: 1 },
          }),
        ],
      }),
      {
        pod: 'web-3',
        container: PROXY,
        reason: 'CrashLoopBackOff',
        restarts: 2,
        message: 'last ended Error with exit code 1',
      },
    ],
    [
      'ImagePullBackOff: never started, no restarts',
      pod('web-4', {
        init: [
          status(PROXY, {
            waiting: {
              reason: 'ImagePullBackOff',
              message: 'Back-off pulling image "ghcr.io/outrigger/proxy:9.9.9"',
            },
          }),
        ],
      }),
      {
        pod: 'web-4',
        container: PROXY,
        reason: 'ImagePullBackOff',
        restarts: 0,
        message: 'Back-off pulling image "ghcr.io/outrigger/proxy:9.9.9"',
      },
    ],
    [
      'ErrImagePull, before the back-off starts',
      pod('web-5', {
        containers: [
          status(PROXY, { waiting: { reason: 'ErrImagePull', message: 'manifest unknown' } }),
        ],
      }),
      {
        pod: 'web-5',
        container: PROXY,
        reason: 'ErrImagePull',
        restarts: 0,
        message: 'manifest unknown',
      },
    ],
    [
      'running again after restarts: the last termination is the message',
      pod('web-6', {
        init: [
          status(PROXY, {
            restartCount: 1,
            lastTerminated: { reason: 'OOMKilled', exitCode: 137 },
          }),
        ],
      }),
      {
        pod: 'web-6',
        container: PROXY,
        reason: 'Restarted',
        restarts: 1,
        message: 'last ended OOMKilled with exit code 137',
      },
    ],
    [
      'restarted, the termination without a reason',
      pod('web-7', {
        containers: [status(PROXY, { restartCount: 3, lastTerminated: { exitCode: 2 } })],
      }),
      {
        pod: 'web-7',
        container: PROXY,
        reason: 'Restarted',
        restarts: 3,
        message: 'last ended Terminated with exit code 2',
      },
    ],
    [
      'restarted, and the kubelet kept no last state',
      pod('web-8', { containers: [status(PROXY, { restartCount: 1 })] }),
      { pod: 'web-8', container: PROXY, reason: 'Restarted', restarts: 1, message: '' },
    ],
  ])('%s', (_name, p, expected) => {
    expect(proxyTrouble(p, PROXY)).toEqual(expected);
  });

  it.each<[string, PodLike]>([
    [
      'a healthy proxy, running, never restarted',
      pod('ok-1', { init: [init, status(PROXY)], containers: [app] }),
    ],
    [
      // The app's trouble is the app's: it must not stop a wave of proxy configurations.
      'the app container in CrashLoopBackOff, the proxy healthy',
      pod('ok-2', {
        init: [status(PROXY)],
        containers: [status('app', crashLoop)],
      }),
    ],
    [
      'another container restarted, the proxy not',
      pod('ok-3', {
        containers: [
          status(PROXY),
          status('app', { restartCount: 7, lastTerminated: { exitCode: 1 } }),
        ],
      }),
    ],
    [
      'the proxy starting up: waiting, but not in a back-off',
      pod('ok-4', { init: [status(PROXY, { waiting: { reason: 'ContainerCreating' } })] }),
    ],
    [
      'the proxy waiting for the init container',
      pod('ok-5', { init: [init, status(PROXY, { waiting: { reason: 'PodInitializing' } })] }),
    ],
    [
      'a pod with no container statuses yet (Pending)',
      { metadata: { name: 'ok-6' }, status: { phase: 'Pending' } },
    ],
    ['a pod with no status at all', { metadata: { name: 'ok-7' } }],
    ['a pod without our proxy', pod('ok-8', { containers: [app] })],
  ])('no trouble: %s', (_name, p) => {
    expect(proxyTrouble(p, PROXY)).toBeUndefined();
  });

  it('looks for the proxy by the configured name', () => {
    const p = pod('web-1', { init: [status('mesh-proxy', crashLoop)] });
    expect(proxyTrouble(p, 'mesh-proxy')).toMatchObject({
      container: 'mesh-proxy',
      reason: 'CrashLoopBackOff',
    });
    expect(proxyTrouble(p, PROXY)).toBeUndefined();
  });

  it('counts every back-off reason the kubelet uses for a container that will not come up', () => {
    for (const reason of BACKOFF_REASONS) {
      const p = pod('web-1', { init: [status(PROXY, { waiting: { reason } })] });
      expect(proxyTrouble(p, PROXY)).toMatchObject({ reason });
    }
  });

  it('describes the trouble naming the container and the pod', () => {
    const t = proxyTrouble(pod('web-1', { init: [status(PROXY, crashLoop)] }), PROXY);
    if (!t) throw new Error('expected trouble');
    expect(describeTrouble(t)).toBe(
      `container ${PROXY} of pod web-1 is CrashLoopBackOff, restarted 4 times: ${crashLoop.waiting.message}`,
    );
    const restarted = proxyTrouble(
      pod('web-2', {
        init: [
          status(PROXY, {
            restartCount: 1,
            lastTerminated: { reason: 'OOMKilled', exitCode: 137 },
          }),
        ],
      }),
      PROXY,
    );
    if (!restarted) throw new Error('expected trouble');
    expect(describeTrouble(restarted)).toBe(
      `container ${PROXY} of pod web-2 is restarting, restarted 1 times: last ended OOMKilled with exit code 137`,
    );
  });
});

describe('isPodReady', () => {
  it.each<[string, PodLike, boolean]>([
    ['Ready True', pod('a'), true],
    ['Ready False', pod('a', { ready: false }), false],
    ['no conditions', { metadata: { name: 'a' }, status: { phase: 'Pending' } }, false],
    ['no status', { metadata: { name: 'a' } }, false],
    [
      'ContainersReady alone is not Ready (readiness gates)',
      { status: { conditions: [{ type: 'ContainersReady', status: 'True' }] } },
      false,
    ],
  ])('%s', (_name, p, expected) => {
    expect(isPodReady(p)).toBe(expected);
  });
});

// ---------------------------------------------------------------------------------------------
// The verdict.

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
});
const stall = { detail: 'not complete 600s after the restart' };

function gate(o: Partial<GateInput> = {}): GateInput {
  return {
    rollout: complete,
    stall: undefined,
    pods: pods(2, 2),
    podsSynced: true,
    desired: 2,
    ...o,
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
    expect(counted).toEqual({ total: 1, ready: 1, trouble: undefined });
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
