// Fixtures of the health-gate tests: pods and container statuses as the kubelet reports them.

import { type PodLike } from '../src';

export const PROXY = 'outrigger-proxy';

export type Status = Record<string, unknown>;

/** A container status as the kubelet writes it. */
export function status(
  name: string,
  o: {
    waiting?: { reason: string; message?: string };
    restartCount?: number;
    lastTerminated?: { reason?: string; exitCode?: number; finishedAt?: string };
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

export function pod(
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

export const crashLoop = {
  waiting: {
    reason: 'CrashLoopBackOff',
    message: 'back-off 1m20s restarting failed container=outrigger-proxy pod=web-1_shop',
  },
  restartCount: 4,
  lastTerminated: { reason: 'Error', exitCode: 1 },
};
export const app = status('app');
export const init = status('outrigger-init');
