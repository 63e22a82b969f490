// Events: written once per subject, reason and `once` key; a failed write is logged, not thrown,
// and tried again next time.

import type { KubeApi } from '@outrigger/kube';
import { silentLogger } from '../src/log';
import { EventRecorder, type EventRecord } from '../src/events';

const logger = silentLogger();

function recorder(fail = false) {
  const created: unknown[] = [];
  let writes = 0;
  const api = {
    create: (path: string, body: unknown) => {
      if (fail) return Promise.reject(new Error('forbidden'));
      created.push({ namespace: path.split('/')[4], body });
      return Promise.resolve(body);
    },
  } as unknown as Pick<KubeApi, 'create'>;
  const events = new EventRecorder({
    api,
    acquireWrite: () => Promise.resolve(),
    onWrite: () => (writes += 1),
    logger,
    instance: 'test',
    clock: () => 0,
  });
  return { events, created, writes: () => writes };
}

const restarted: EventRecord = {
  subject: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web' },
  type: 'Normal',
  reason: 'Restarted',
  message: 'restarted to roll out configuration revision r1',
  once: 'r1',
};

describe('EventRecorder', () => {
  it('writes an Event on the subject once per reason and key', async () => {
    const { events, created, writes } = recorder();
    await events.record(restarted);
    await events.record(restarted);
    await events.record({ ...restarted, once: 'r2' });
    expect(created).toHaveLength(2);
    expect(writes()).toBe(2);
    expect(created[0]).toMatchObject({
      namespace: 'shop',
      body: {
        involvedObject: { kind: 'Deployment', name: 'web', namespace: 'shop' },
        reason: 'Restarted',
        type: 'Normal',
        source: { component: 'outrigger-controller' },
        metadata: { generateName: 'web.' },
      },
    });
  });

  it('writes an Event that happens once by nature every time, and keeps no key for it', async () => {
    const { events, created } = recorder();
    await events.record(restarted);
    for (let i = 0; i < 3; i++) await events.record({ ...restarted, once: null });
    expect(created).toHaveLength(4);
    expect(events.remembered).toBe(1);
    const failing = recorder(true);
    await failing.events.record({ ...restarted, once: null });
    expect(failing.writes()).toBe(1);
    expect(failing.events.remembered).toBe(0);
  });

  it('never throws, and tries a failed Event again next time', async () => {
    const failing = recorder(true);
    await expect(failing.events.record(restarted)).resolves.toBeUndefined();
    await failing.events.record(restarted);
    expect(failing.writes()).toBe(2);
  });
});
