// The caches keep slim objects (src/watch/slim.ts). Every rule must answer the same on the slim
// object as on the whole one the API server sent: the owner's assessment and the pod counts,
// over random workloads and pods shaped like real ones (managedFields, a last-applied
// annotation, foreign annotations and labels, each kind's strategy and status).

import fc from 'fast-check';
import type { KubernetesObject, V1Namespace, V1Pod } from '@kubernetes/client-node';
import {
  AUTO_RESTART,
  CANARY_REVISION,
  COMPLETED_REVISION,
  CONFIG_REVISION,
  HEALED_AT,
  HEALED_REVISION,
  INJECT,
  OWNER_KIND,
  OWNER_NAME,
  RESTARTED_AT,
  RESTARTED_REVISION,
  REVISION,
  ROLLED_BACK_FROM,
  STAMPED,
  assessOwner,
  mustParseConfig,
  type OwnerInput,
  type StampedKind,
  type Workload,
  namespaceMeta,
} from '@outrigger/shared';
import { countPods } from '../src/watch/pods';
import { slimNamespace, slimPod, slimWorkload } from '../src/watch/slim';

const R0 = '0000000000';
const R1 = '1111111111';
const NOW = Date.parse('2026-05-01T12:00:00Z');
const config = mustParseConfig(
  'rollout:\n  canary:\n    count: 1\n    ownerSelector:\n      matchLabels: {ring: canary}\n',
);

const maybe = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });
const iso = fc.integer({ min: NOW - 3_600_000, max: NOW }).map((ms) => new Date(ms).toISOString());

const managedFields = [
  {
    manager: 'kubectl-client-side-apply',
    operation: 'Update',
    apiVersion: 'apps/v1',
    time: '2026-04-30T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: { 'f:metadata': { 'f:annotations': { '.': {} } }, 'f:spec': { 'f:replicas': {} } },
  },
];

/** Annotations of ours and of others, as a real object carries them. */
const annotations = fc
  .record({
    [RESTARTED_REVISION]: maybe(fc.constantFrom(R0, R1)),
    [RESTARTED_AT]: maybe(iso),
    [HEALED_REVISION]: maybe(fc.constantFrom(R0, R1)),
    [HEALED_AT]: maybe(iso),
    [CANARY_REVISION]: maybe(fc.constantFrom(R0, R1)),
    [ROLLED_BACK_FROM]: maybe(fc.constantFrom(R0, R1)),
    'kubectl.kubernetes.io/last-applied-configuration': fc.constant('{"apiVersion":"apps/v1"}'),
    'deployment.kubernetes.io/revision': fc.constant('4'),
  })
  .map(defined);

function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const templateAnnotations = fc
  .record({
    [OWNER_KIND]: maybe(fc.constantFrom('Deployment', 'StatefulSet')),
    [OWNER_NAME]: maybe(fc.constantFrom('web', 'other')),
    [CONFIG_REVISION]: maybe(fc.constantFrom(R0, R1)),
    [INJECT]: maybe(fc.constantFrom('enabled', 'disabled')),
    [AUTO_RESTART]: maybe(fc.constant('disabled')),
    [RESTARTED_AT]: maybe(iso),
    'config.outrigger.dev/proxy-cpu': maybe(fc.constant('200m')),
    'prometheus.io/scrape': fc.constant('true'),
  })
  .map(defined);

const condition = fc.record({
  type: fc.constantFrom('Progressing', 'Available'),
  status: fc.constantFrom('True', 'False'),
  reason: fc.constantFrom(
    'NewReplicaSetAvailable',
    'ProgressDeadlineExceeded',
    'MinimumReplicasAvailable',
  ),
  message: fc.constant('ReplicaSet "web-5d4f" has successfully progressed.'),
  lastTransitionTime: iso,
  lastUpdateTime: iso,
});

const strategy = fc.constantFrom(
  undefined,
  { type: 'RollingUpdate', rollingUpdate: { partition: 1 } },
  { type: 'OnDelete' },
  { type: 'RollingUpdate' },
);

const workloadArb = fc
  .record({
    kind: fc.constantFrom<StampedKind>('Deployment', 'StatefulSet', 'DaemonSet'),
    annotations,
    labels: fc.constantFrom({ app: 'web' }, { app: 'web', ring: 'canary' }),
    completed: fc.constantFrom(undefined, R0, R1),
    templateAnnotations,
    templateLabels: fc.constantFrom(
      { app: 'web' },
      { app: 'web', [STAMPED]: 'true' },
      { [INJECT]: 'enabled' },
    ),
    replicas: maybe(fc.integer({ min: 0, max: 3 })),
    paused: maybe(fc.boolean()),
    strategy,
    generation: fc.integer({ min: 1, max: 4 }),
    observed: fc.integer({ min: 0, max: 4 }),
    counts: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 6, maxLength: 6 }),
    conditions: fc.array(condition, { maxLength: 2 }),
    revisions: fc.constantFrom(['web-1', 'web-1'], ['web-1', 'web-2']),
    progressDeadlineSeconds: maybe(fc.constantFrom(60, 600)),
  })
  .map((g): Workload => {
    const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0] = g.counts;
    const status = {
      observedGeneration: g.observed,
      replicas: a,
      updatedReplicas: b,
      readyReplicas: c,
      availableReplicas: d,
      currentReplicas: e,
      currentRevision: g.revisions[0],
      updateRevision: g.revisions[1],
      desiredNumberScheduled: a,
      currentNumberScheduled: b,
      updatedNumberScheduled: c,
      numberReady: d,
      numberAvailable: f,
      conditions: g.conditions,
    };
    return {
      apiVersion: 'apps/v1',
      kind: g.kind,
      metadata: {
        name: 'web',
        namespace: 'shop',
        uid: '0b9a',
        resourceVersion: '812',
        generation: g.generation,
        creationTimestamp: '2026-04-01T00:00:00Z',
        labels: g.completed ? { ...g.labels, [COMPLETED_REVISION]: g.completed } : g.labels,
        annotations: g.annotations,
        managedFields,
      },
      spec: defined({
        replicas: g.kind === 'DaemonSet' ? undefined : g.replicas,
        paused: g.paused,
        strategy: g.kind === 'Deployment' ? { type: 'RollingUpdate' } : undefined,
        updateStrategy: g.kind === 'Deployment' ? undefined : g.strategy,
        progressDeadlineSeconds: g.progressDeadlineSeconds,
        revisionHistoryLimit: 10,
        selector: { matchLabels: { app: 'web' } },
        template: {
          metadata: { labels: g.templateLabels, annotations: g.templateAnnotations },
          spec: {
            containers: [{ name: 'web', image: 'web:1', env: [{ name: 'A', value: 'b' }] }],
            hostNetwork: false,
          },
        },
      }),
      status,
    } as Workload;
  });

const namespaceArb: fc.Arbitrary<V1Namespace> = fc.record({
  metadata: fc.record({
    name: fc.constant('shop'),
    resourceVersion: fc.constant('3'),
    labels: fc.constantFrom<Record<string, string>>(
      {},
      { ring: 'canary' },
      { 'outrigger.dev/injection': 'enabled' },
    ),
    annotations: fc.constantFrom<Record<string, string>>(
      {},
      { [INJECT]: 'enabled' },
      { [INJECT]: 'disabled', 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
    ),
    managedFields: fc.constant(managedFields as never),
  }),
});

describe('slimWorkload', () => {
  it('assesses every owner as the whole object does', () => {
    fc.assert(
      fc.property(
        workloadArb,
        namespaceArb,
        fc.constantFrom(R0, R1),
        fc.integer({ min: NOW, max: NOW + 3_600_000 }),
        (workload, ns, revision, nowMs) => {
          const slim = slimWorkload(workload.kind)(workload as unknown as KubernetesObject);
          const slimNs = slimNamespace(ns);
          const input = (w: Workload, n: V1Namespace): OwnerInput => ({
            workload: w,
            namespace: namespaceMeta(n),
            config,
            revision,
            pods: { escaped: 0, outdated: 1, injected: 2 },
            nowMs,
            systemNamespace: 'outrigger-system',
          });
          expect(assessOwner(input(slim, slimNs))).toEqual(assessOwner(input(workload, ns)));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('keeps a few hundred bytes of a workload of several kilobytes', () => {
    const [whole] = fc.sample(workloadArb, 1);
    const slim = slimWorkload('Deployment')(whole as unknown as KubernetesObject);
    expect(JSON.stringify(slim)).not.toContain('managedFields');
    expect(JSON.stringify(slim)).not.toContain('last-applied');
    expect(JSON.stringify(slim)).not.toContain('containers');
  });
});

const containerStatus = fc.record({
  name: fc.constantFrom('outrigger-proxy', 'outrigger-init', 'web'),
  restartCount: fc.integer({ min: 0, max: 2 }),
  ready: fc.boolean(),
  image: fc.constant('registry.example/proxy:1.2.3'),
  imageID: fc.constant('registry.example/proxy@sha256:0123'),
  containerID: fc.constant('containerd://abcd'),
  state: fc.constantFrom(
    { running: { startedAt: '2026-05-01T11:00:00Z' } },
    {
      waiting: { reason: 'CrashLoopBackOff', message: 'back-off 10s restarting failed container' },
    },
    { waiting: { reason: 'ContainerCreating' } },
  ),
  lastState: fc.constantFrom(
    {},
    { terminated: { reason: 'Error', exitCode: 3, startedAt: '2026-05-01T10:00:00Z' } },
  ),
});

const podArb = fc
  .record({
    name: fc.constantFrom('web-1', 'web-2', 'web-3', 'web-4'),
    revision: fc.constantFrom(undefined, R0, R1),
    stamped: fc.boolean(),
    owner: fc.constantFrom('rs', 'stamp', 'none'),
    deleting: fc.boolean(),
    phase: fc.constantFrom('Running', 'Pending', 'Failed', 'Succeeded'),
    ready: fc.constantFrom('True', 'False'),
    statuses: fc.array(containerStatus, { maxLength: 3 }),
    init: fc.array(containerStatus, { maxLength: 1 }),
  })
  .map((g): V1Pod => ({
    metadata: {
      name: g.name,
      namespace: 'shop',
      uid: `u-${g.name}`,
      resourceVersion: '9',
      deletionTimestamp: g.deleting ? new Date(NOW) : undefined,
      labels: defined({
        'pod-template-hash': '5d4f',
        [REVISION]: g.revision,
        [STAMPED]: g.stamped ? 'true' : undefined,
      }) as Record<string, string>,
      annotations:
        g.owner === 'stamp'
          ? {
              [OWNER_KIND]: 'Deployment',
              [OWNER_NAME]: 'web',
              'kubectl.kubernetes.io/restartedAt': 'x',
            }
          : { 'kubectl.kubernetes.io/restartedAt': 'x' },
      ownerReferences:
        g.owner === 'rs'
          ? [
              {
                apiVersion: 'apps/v1',
                kind: 'ReplicaSet',
                name: 'web-5d4f',
                uid: 'r',
                controller: true,
              },
            ]
          : undefined,
      managedFields: managedFields as never,
    },
    spec: { containers: [{ name: 'web', image: 'web:1' }] },
    status: {
      phase: g.phase,
      conditions: [
        { type: 'Initialized', status: 'True' },
        { type: 'Ready', status: g.ready },
      ],
      containerStatuses: g.statuses as never,
      initContainerStatuses: g.init as never,
    },
  }));

describe('slimPod', () => {
  it("counts every owner's pods as the whole pods do", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(podArb, { selector: (p) => p.metadata?.name, maxLength: 4 }),
        fc.uniqueArray(podArb, { selector: (p) => p.metadata?.name, maxLength: 4 }),
        fc.constantFrom(R0, R1),
        (escaped, injected, revision) => {
          const names = { proxy: 'outrigger-proxy', init: 'outrigger-init' };
          // JSON, as the watch hands objects over: times are strings there.
          const json = (pods: V1Pod[]) => JSON.parse(JSON.stringify(pods)) as V1Pod[];
          const whole = countPods(
            { escaped: json(escaped), injected: json(injected) },
            revision,
            names,
          );
          const slim = countPods(
            {
              escaped: json(escaped).map((p) => slimPod(p as KubernetesObject)),
              injected: json(injected).map((p) => slimPod(p as KubernetesObject)),
            },
            revision,
            names,
          );
          expect(slim).toEqual(whole);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
