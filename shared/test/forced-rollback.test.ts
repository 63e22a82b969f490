// The forced rollback (shared/src/rollout/forced-rollback.ts): a StatefulSet managed OrderedReady whose
// canary restart left a pod not Ready on the failed revision is not repaired by reverting its
// template, as its controller waits for that pod to be Ready before it replaces it. The wave
// deletes such pods, highest ordinal first, one at a time, never a Ready one; with
// `forceRollback: false` it only says which pods to delete. The whole story is run through the
// planner, as the controller runs it, from the canary's restart to the StatefulSet whole again.

import {
  LAST_GOOD_REVISION,
  countRevisionPod,
  mustParseConfig,
  ordinalOf,
  ownerKey,
  stuckRollback,
  type PodCounts,
  type PodLike,
  type RevisionPods,
  type StatefulSetObject,
  type WavePlan,
  type Workload,
} from '../src';
import { CANARY_CONFIG, Cluster, PROXY, R0, R1, SECOND, T0, pod } from './wave-fixtures';

function statefulSet(
  name: string,
  o: { replicas?: number; policy?: string; strategy?: string } = {},
): StatefulSetObject {
  const replicas = o.replicas ?? 2;
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: {
      name,
      namespace: 'shop',
      generation: 1,
      resourceVersion: '10',
      labels: { app: name, ring: 'canary' },
      annotations: {},
    },
    spec: {
      replicas,
      ...(o.policy ? { podManagementPolicy: o.policy } : {}),
      updateStrategy: { type: o.strategy ?? 'RollingUpdate' },
      template: {
        metadata: {
          labels: { app: name, 'outrigger.dev/stamped': 'true' },
          annotations: {
            'outrigger.dev/owner-kind': 'StatefulSet',
            'outrigger.dev/owner-name': name,
            'outrigger.dev/config-revision': R0,
          },
        },
        spec: { containers: [{ name: 'app', image: `${name}:1` }] },
      },
    },
    status: {
      observedGeneration: 1,
      replicas,
      readyReplicas: replicas,
      updatedReplicas: replicas,
      currentRevision: `${name}-a`,
      updateRevision: `${name}-a`,
    },
  };
}

/** The StatefulSet controller's status after a template change: `ready` of the pods Ready. */
function observedWith(set: Workload, ready: number, updated = 0): Workload {
  const s = set as StatefulSetObject;
  const replicas = s.spec?.replicas ?? 1;
  return {
    ...s,
    status: {
      observedGeneration: s.metadata?.generation,
      replicas,
      readyReplicas: ready,
      updatedReplicas: updated,
      currentRevision: `${s.metadata?.name}-a`,
      updateRevision: `${s.metadata?.name}-g${s.metadata?.generation}`,
    },
  };
}

const withIdentity = (p: PodLike, uid: string, rv: string): PodLike => ({
  ...p,
  metadata: { ...p.metadata, uid, resourceVersion: rv },
});

/** The owner's pods: `atR1` at the failed revision (counted for the gate), `atR0` others. */
function pods(atR1: PodLike[], atR0: number): PodCounts {
  const atRevision = atR1.reduce<RevisionPods | undefined>(
    (c, p) => countRevisionPod(c, p, { proxy: PROXY }),
    undefined,
  );
  return { escaped: 0, outdated: atR0, injected: atR0 + atR1.length, atRevision };
}

const crashing = (name: string, rv = '20') =>
  withIdentity(pod(name, 'crashing'), `uid-${name}`, rv);

const deletions = (p: WavePlan) => p.deletePods.map((d) => d.pod.name);
const entryOf = (p: WavePlan, name: string) => {
  const e = p.report.find((r) => ownerKey(r.owner) === `shop/StatefulSet/${name}`);
  if (!e) throw new Error(`no entry for ${name}`);
  return e;
};

/**
 * The developers' scenario: StatefulSet db with two replicas, OrderedReady, the canary; the new
 * proxy never becomes Ready. The canary restart leaves db-1 on R1 crashing and db-0 on R0; the
 * gate fails and db is rolled back. Returns the cluster at that point.
 */
function rolledBackDb(config = CANARY_CONFIG, replicas = 2, policy?: string): Cluster {
  const c = new Cluster(mustParseConfig(config), statefulSet('db', { replicas, policy }));
  c.configMap = { [LAST_GOOD_REVISION]: R0 };
  c.carryOut(c.plan(T0), T0);
  const restarted = c.get('db');
  expect(restarted.metadata?.annotations?.['outrigger.dev/canary-revision']).toBe(R1);
  c.workloads.set('db', observedWith(restarted, replicas - 1, 1));
  c.pods.set('db', pods([crashing(`db-${replicas - 1}`)], replicas - 1));
  const failed = c.plan(T0 + 60 * SECOND);
  expect(failed.stop).toMatchObject({ reason: 'proxy-failing' });
  expect(failed.restart.map((r) => r.kind)).toEqual(['rollback']);
  // Nothing is deleted in the step that orders the rollback: the template is not reverted yet.
  expect(failed.deletePods).toEqual([]);
  c.carryOut(failed, T0 + 60 * SECOND);
  // The StatefulSet controller sees the reverted template but, OrderedReady, replaces nothing.
  c.workloads.set('db', observedWith(c.get('db'), replicas - 1, 0));
  return c;
}

describe('the forced rollback of a StatefulSet left not Ready by its failed canary', () => {
  it('deletes the stuck pod once the template is reverted, then waits for its replacement', () => {
    const c = rolledBackDb();
    const stuck = c.plan(T0 + 65 * SECOND);
    expect(stuck.stage).toBe('rolling-back');
    expect(stuck.deletePods).toEqual([
      {
        owner: { namespace: 'shop', kind: 'StatefulSet', name: 'db' },
        pod: { name: 'db-1', uid: 'uid-db-1', resourceVersion: '20' },
        from: R1,
        detail: expect.stringContaining('db-1 not Ready on 1111111111'),
      },
    ]);
    expect(entryOf(stuck, 'db')).toMatchObject({
      reason: 'forced-rollback',
      detail: expect.stringContaining('deleting db-1 so that the StatefulSet recreates it'),
    });
    // The wave stays stopped, and nothing else restarts.
    expect(stuck).toMatchObject({ stopped: true, restart: [] });

    // db-1 was deleted; its replacement, on R0, is not Ready yet: nothing more to delete.
    c.pods.set('db', pods([], 2));
    const replacing = c.plan(T0 + 70 * SECOND);
    expect(replacing.deletePods).toEqual([]);
    expect(entryOf(replacing, 'db').reason).toBe('wave-stopped');

    // The StatefulSet is whole on R0 again: the rollback completes and the wave is rolled back.
    c.workloads.set('db', { ...observedWith(c.get('db'), 2, 2) });
    const s = c.get('db') as StatefulSetObject;
    c.workloads.set('db', {
      ...s,
      status: { ...s.status, currentRevision: s.status?.updateRevision },
    });
    const back = c.plan(T0 + 90 * SECOND);
    expect(back).toMatchObject({ stage: 'rolled-back', deletePods: [] });
    expect(back.complete.map((o) => o.name)).toEqual(['db']);
  });

  it('never deletes a pod that is Ready, even on the failed revision', () => {
    const c = rolledBackDb();
    const ready = withIdentity(pod('db-1', 'running'), 'uid-db-1', '21');
    c.pods.set('db', pods([ready], 1));
    const p = c.plan(T0 + 65 * SECOND);
    expect(p.deletePods).toEqual([]);
    expect(entryOf(p, 'db').reason).not.toBe('forced-rollback');
  });

  it('takes the highest ordinal first, and the next only once every other pod is Ready', () => {
    const c = rolledBackDb(CANARY_CONFIG, 3);
    // db-2 and db-1 are both stuck on R1 (say, Ready once and failing since); db-0 is Ready.
    c.pods.set('db', pods([crashing('db-1', '30'), crashing('db-2', '31')], 1));
    c.workloads.set('db', observedWith(c.get('db'), 1, 0));
    expect(deletions(c.plan(T0 + 65 * SECOND))).toEqual(['db-2']);

    // db-2's replacement is not Ready yet: db-1 waits, and the report says why.
    c.pods.set('db', pods([crashing('db-1', '30')], 2));
    const waiting = c.plan(T0 + 70 * SECOND);
    expect(deletions(waiting)).toEqual([]);
    expect(entryOf(waiting, 'db').detail).toContain(
      'waiting for the other pods to be Ready before deleting db-1',
    );

    // Once it is, db-1 goes.
    c.workloads.set('db', observedWith(c.get('db'), 2, 1));
    expect(deletions(c.plan(T0 + 75 * SECOND))).toEqual(['db-1']);
  });

  it('with forceRollback off, deletes nothing and names the pods to delete by hand', () => {
    const c = rolledBackDb(`${CANARY_CONFIG}\n  forceRollback: false`);
    const p = c.plan(T0 + 65 * SECOND);
    expect(p.deletePods).toEqual([]);
    expect(entryOf(p, 'db')).toMatchObject({
      reason: 'forced-rollback',
      detail: expect.stringContaining('kubectl delete pod -n shop db-1'),
    });
  });

  it('waits for the pods at the revision to be listed before it deletes', () => {
    const c = rolledBackDb();
    expect(c.plan(T0 + 65 * SECOND, { podsSynced: false }).deletePods).toEqual([]);
  });

  it('deletes nothing in dry-run or manual mode', () => {
    for (const mode of ['dry-run', 'manual']) {
      const c = rolledBackDb();
      const config = mustParseConfig(`${CANARY_CONFIG}\n  mode: ${mode}`);
      const dry = new Cluster(config, c.get('db'));
      dry.configMap = c.configMap;
      dry.pods.set('db', c.pods.get('db') ?? pods([], 0));
      expect(dry.plan(T0 + 65 * SECOND).deletePods).toEqual([]);
    }
  });

  it('leaves a Parallel StatefulSet to its own controller, which replaces broken pods itself', () => {
    const c = rolledBackDb(CANARY_CONFIG, 2, 'Parallel');
    const p = c.plan(T0 + 65 * SECOND);
    expect(p.deletePods).toEqual([]);
    expect(entryOf(p, 'db').reason).toBe('wave-stopped');
  });
});

describe('stuckRollback, one owner', () => {
  const db = (o: { policy?: string; strategy?: string } = {}) =>
    observedWith(statefulSet('db', { replicas: 2, ...o }), 1);
  const input = (workload: Workload) => ({
    workload,
    target: R1,
    rolledBackFrom: R1,
    inFlight: true,
    restartedRevision: R0,
    unready: [{ name: 'db-1', uid: 'u', resourceVersion: '1' }],
  });

  it('is the StatefulSet OrderedReady (the default) rolled back from the current revision', () => {
    expect(stuckRollback(input(db()))?.next?.name).toBe('db-1');
    expect(stuckRollback(input(db({ policy: 'OrderedReady' })))?.next?.name).toBe('db-1');
  });

  it.each<[string, Partial<ReturnType<typeof input>>]>([
    ['not rolled back', { rolledBackFrom: undefined }],
    ['rolled back from another revision', { rolledBackFrom: R0 }],
    ['its rollback finished rolling', { inFlight: false }],
    ['restarted to the current revision since (a resume)', { restartedRevision: R1 }],
    ['no pod stuck', { unready: [] }],
    ['a pod of another name', { unready: [{ name: 'cache-1', uid: 'u', resourceVersion: '1' }] }],
  ])('is nothing when %s', (_why, change) => {
    expect(stuckRollback({ ...input(db()), ...change })).toBeUndefined();
  });

  it('is nothing for Parallel, OnDelete, a Deployment or a DaemonSet', () => {
    expect(stuckRollback(input(db({ policy: 'Parallel' })))).toBeUndefined();
    expect(stuckRollback(input(db({ strategy: 'OnDelete' })))).toBeUndefined();
    const set = db();
    for (const kind of ['Deployment', 'DaemonSet'] as const)
      expect(stuckRollback(input({ ...set, kind }))).toBeUndefined();
  });

  it('waits while the StatefulSet status predates its spec', () => {
    const set = db();
    const stale = { ...set, status: { ...set.status, observedGeneration: 0 } } as Workload;
    expect(stuckRollback(input(stale))).toMatchObject({ next: undefined });
  });

  it('reads ordinals only from the StatefulSet own pod names', () => {
    expect(ordinalOf('db', 'db-0')).toBe(0);
    expect(ordinalOf('db', 'db-12')).toBe(12);
    for (const name of ['db-', 'db-01', 'db-1a', 'dbx-1', 'db-x-1', 'db-9999999999'])
      expect(ordinalOf('db', name)).toBe(-1);
  });
});
