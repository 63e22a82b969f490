// The health gate (shared/src/rollout/gate.ts) an owner restarted by a wave must pass before the wave
// goes on. What it reads is the pod status the kubelet writes: the proxy is an init container
// with restartPolicy Always (a native sidecar) or a regular container, so its status is in
// initContainerStatuses or containerStatuses. The rules: the proxy is in trouble when it waits
// in a back-off (it will not come up by itself) or has restarted at all; other containers'
// troubles are not the proxy's; trouble or a stall fails the gate; anything not yet known or
// not yet Ready keeps it pending; it passes only on a complete rollout with every pod Ready.

import { BACKOFF_REASONS, describeTrouble, isPodReady, proxyTrouble, type PodLike } from '../src';

import { PROXY, status, pod, crashLoop, app, init } from './gate-fixtures';

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

describe('proxyTrouble since the wave restarted the owner', () => {
  const restartAt = Date.parse('2026-05-01T12:00:00Z');
  const restartedOnce = (finishedAt: string | undefined) =>
    pod('web-9', {
      init: [
        status(PROXY, {
          restartCount: 1,
          lastTerminated: { reason: 'Error', exitCode: 1, ...(finishedAt ? { finishedAt } : {}) },
        }),
      ],
    });

  it('a restart that ended before the wave restarted the owner is no trouble', () => {
    expect(proxyTrouble(restartedOnce('2026-04-24T08:00:00Z'), PROXY, undefined, restartAt)).toBe(
      undefined,
    );
  });

  it('a restart that ended at or after it is', () => {
    for (const at of ['2026-05-01T12:00:00Z', '2026-05-01T12:00:30Z'])
      expect(proxyTrouble(restartedOnce(at), PROXY, undefined, restartAt)?.reason).toBe(
        'Restarted',
      );
  });

  it('a restart of unknown time counts, and without a restart time every restart counts', () => {
    expect(proxyTrouble(restartedOnce(undefined), PROXY, undefined, restartAt)?.reason).toBe(
      'Restarted',
    );
    expect(proxyTrouble(restartedOnce('2026-04-24T08:00:00Z'), PROXY)?.reason).toBe('Restarted');
  });

  it('a back-off counts whenever its last run ended', () => {
    const p = pod('web-9', {
      init: [
        status(PROXY, {
          ...crashLoop,
          lastTerminated: { ...crashLoop.lastTerminated, finishedAt: '2026-04-24T08:00:00Z' },
        }),
      ],
    });
    expect(proxyTrouble(p, PROXY, undefined, restartAt)?.reason).toBe('CrashLoopBackOff');
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
