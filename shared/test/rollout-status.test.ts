import {
  asWorkload,
  deadlineExceeded,
  rolloutStatus,
  type DaemonSetObject,
  type DeploymentObject,
  type RolloutStatus,
  type StatefulSetObject,
} from '../src/rollout/rollout-status';

// Builders for the three kinds, in the shape the API returns them: every case below starts
// from a finished rollout and changes only the fields it is about.

function deployment(
  spec: DeploymentObject['spec'] = {},
  status: DeploymentObject['status'] = {},
  generation = 2,
): DeploymentObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop', generation },
    spec: { replicas: 3, ...spec },
    status: {
      observedGeneration: 2,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      conditions: [
        { type: 'Available', status: 'True', reason: 'MinimumReplicasAvailable' },
        { type: 'Progressing', status: 'True', reason: 'NewReplicaSetAvailable' },
      ],
      ...status,
    },
  };
}

function statefulSet(
  spec: StatefulSetObject['spec'] = {},
  status: StatefulSetObject['status'] = {},
  generation = 2,
): StatefulSetObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name: 'db', namespace: 'shop', generation },
    spec: {
      replicas: 3,
      updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      ...spec,
    },
    status: {
      observedGeneration: 2,
      replicas: 3,
      readyReplicas: 3,
      updatedReplicas: 3,
      currentReplicas: 3,
      currentRevision: 'db-7f9c',
      updateRevision: 'db-7f9c',
      ...status,
    },
  };
}

function daemonSet(
  spec: DaemonSetObject['spec'] = {},
  status: DaemonSetObject['status'] = {},
  generation = 2,
): DaemonSetObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: 'agent', namespace: 'shop', generation },
    spec: { updateStrategy: { type: 'RollingUpdate' }, ...spec },
    status: {
      observedGeneration: 2,
      desiredNumberScheduled: 4,
      currentNumberScheduled: 4,
      updatedNumberScheduled: 4,
      numberReady: 4,
      numberAvailable: 4,
      ...status,
    },
  };
}

/** The part of a status a table row pins: its state and, when it has one, its reason. */
function summary(s: RolloutStatus): string {
  switch (s.state) {
    case 'complete':
      return 'complete';
    case 'progressing':
      return `progressing/${s.reason}`;
    case 'stalled':
      return `stalled/${s.reason}`;
    case 'unsupported':
      return `unsupported/${s.strategy}`;
  }
}

const timedOut = {
  type: 'Progressing',
  status: 'False',
  reason: 'ProgressDeadlineExceeded',
  message: 'ReplicaSet "web-5d9" has timed out progressing.',
  lastTransitionTime: '2025-03-01T10:10:00Z',
};

describe('rolloutStatus: Deployment (kubectl DeploymentStatusViewer)', () => {
  it.each<[string, DeploymentObject, string]>([
    ['finished', deployment(), 'complete'],
    ['spec change not observed yet', deployment({}, {}, 3), 'progressing/spec-not-observed'],
    [
      'not observed wins over a stale timeout',
      deployment({}, { conditions: [timedOut] }, 3),
      'progressing/spec-not-observed',
    ],
    [
      'Progressing condition says ProgressDeadlineExceeded',
      deployment({}, { updatedReplicas: 1, conditions: [timedOut] }),
      'stalled/ProgressDeadlineExceeded',
    ],
    [
      'fewer updated replicas than desired',
      deployment({}, { updatedReplicas: 1 }),
      'progressing/updated-replicas',
    ],
    [
      'old replicas pending termination',
      deployment({}, { replicas: 4, updatedReplicas: 3 }),
      'progressing/old-replicas',
    ],
    [
      'updated replicas not yet available',
      deployment({}, { availableReplicas: 2 }),
      'progressing/available-replicas',
    ],
    [
      'no spec.replicas: the updated-replicas check is skipped, as in kubectl',
      deployment(
        { replicas: undefined },
        { replicas: 0, updatedReplicas: 0, availableReplicas: 0 },
      ),
      'complete',
    ],
    [
      'scaled to zero',
      deployment({ replicas: 0 }, { replicas: 0, updatedReplicas: 0, availableReplicas: 0 }),
      'complete',
    ],
    [
      'no status at all (just created)',
      { ...deployment(), status: undefined },
      'progressing/spec-not-observed',
    ],
  ])('%s', (_name, workload, expected) => {
    expect(summary(rolloutStatus(workload))).toBe(expected);
  });

  it('carries when the Deployment stalled, for resume bookkeeping', () => {
    const s = rolloutStatus(deployment({}, { conditions: [timedOut] }));
    expect(s).toEqual({
      state: 'stalled',
      reason: 'ProgressDeadlineExceeded',
      since: '2025-03-01T10:10:00Z',
      detail: expect.stringContaining('has timed out progressing') as unknown,
    });
  });

  it('says what it waits for, in the words kubectl uses', () => {
    expect(rolloutStatus(deployment({}, { updatedReplicas: 1 })).detail).toBe(
      'waiting for deployment "web" rollout to finish: 1 out of 3 new replicas have been updated',
    );
  });
});

describe('rolloutStatus: StatefulSet (kubectl StatefulSetStatusViewer)', () => {
  it.each<[string, StatefulSetObject, string]>([
    ['finished', statefulSet(), 'complete'],
    [
      'OnDelete is not a rollout kubectl can follow',
      statefulSet({ updateStrategy: { type: 'OnDelete' } }),
      'unsupported/OnDelete',
    ],
    [
      'no strategy type: the API defaults it to RollingUpdate',
      statefulSet({ updateStrategy: {} }),
      'complete',
    ],
    ['spec change not observed yet', statefulSet({}, {}, 3), 'progressing/spec-not-observed'],
    [
      'observedGeneration 0 means never observed',
      statefulSet({}, { observedGeneration: 0 }, 0),
      'progressing/spec-not-observed',
    ],
    ['pods not ready', statefulSet({}, { readyReplicas: 2 }), 'progressing/ready-replicas'],
    [
      'partitioned rollout not finished',
      statefulSet(
        { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } } },
        { updatedReplicas: 1 },
      ),
      'progressing/partitioned-rollout',
    ],
    [
      'partitioned rollout finished above the partition',
      statefulSet(
        { updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 1 } } },
        { updatedReplicas: 2, currentRevision: 'db-old' },
      ),
      'complete',
    ],
    [
      'partition 0, not every pod updated',
      statefulSet({}, { updatedReplicas: 2 }),
      'progressing/partitioned-rollout',
    ],
    [
      'no rollingUpdate block: revisions decide',
      statefulSet(
        { updateStrategy: { type: 'RollingUpdate' } },
        { currentRevision: 'db-old', updateRevision: 'db-new' },
      ),
      'progressing/revision-update',
    ],
    [
      'no rollingUpdate block, revisions equal',
      statefulSet({ updateStrategy: { type: 'RollingUpdate' } }),
      'complete',
    ],
  ])('%s', (_name, workload, expected) => {
    expect(summary(rolloutStatus(workload))).toBe(expected);
  });
});

describe('rolloutStatus: DaemonSet (kubectl DaemonSetStatusViewer)', () => {
  it.each<[string, DaemonSetObject, string]>([
    ['finished', daemonSet(), 'complete'],
    [
      'OnDelete is not a rollout kubectl can follow',
      daemonSet({ updateStrategy: { type: 'OnDelete' } }),
      'unsupported/OnDelete',
    ],
    ['no strategy type: the API defaults it', daemonSet({ updateStrategy: undefined }), 'complete'],
    ['spec change not observed yet', daemonSet({}, {}, 3), 'progressing/spec-not-observed'],
    [
      'nodes not yet running the new template',
      daemonSet({}, { updatedNumberScheduled: 3 }),
      'progressing/updated-pods',
    ],
    [
      'updated pods not yet available',
      daemonSet({}, { numberAvailable: 3 }),
      'progressing/available-pods',
    ],
    [
      'no nodes to run on',
      daemonSet({}, { desiredNumberScheduled: 0, updatedNumberScheduled: 0, numberAvailable: 0 }),
      'complete',
    ],
  ])('%s', (_name, workload, expected) => {
    expect(summary(rolloutStatus(workload))).toBe(expected);
  });
});

describe('deadlineExceeded', () => {
  const start = Date.parse('2025-03-01T10:00:00Z');
  it.each<[string, number, boolean]>([
    ['just started', start, false],
    ['exactly at the deadline', start + 600_000, false],
    ['one millisecond past it', start + 600_001, true],
    ['a clock behind the start', start - 5_000, false],
  ])('%s', (_name, now, expected) => {
    expect(deadlineExceeded(start, now, 600)).toBe(expected);
  });
});

describe('asWorkload', () => {
  it.each<[string, boolean]>([
    ['Deployment', true],
    ['StatefulSet', true],
    ['DaemonSet', true],
    ['ReplicaSet', false],
    ['Job', false],
  ])('%s', (kind, expected) => {
    expect(asWorkload({ apiVersion: 'apps/v1', kind }) !== undefined).toBe(expected);
  });

  it('refuses a kind from another API group', () => {
    expect(asWorkload({ apiVersion: 'example.com/v1', kind: 'Deployment' })).toBeUndefined();
  });

  it('takes the kind from the caller for list items, which carry none', () => {
    const item = { metadata: { name: 'web' } };
    expect(asWorkload(item, 'Deployment')).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web' },
    });
    expect(item).toEqual({ metadata: { name: 'web' } });
    expect(asWorkload(item)).toBeUndefined();
  });
});
