// Property tests over generated pods: injection is idempotent, the patch
// means the same to an independent RFC 6902 implementation, nothing the user wrote changes,
// and the injected Pod is valid against the Kubernetes Pod schema.

import fc from 'fast-check';
import { applyPatch as applyFastJsonPatch, type Operation } from 'fast-json-patch';
import { Pod } from 'kubernetes-models/v1/Pod';
import { applyPatch as applyRfc6902 } from 'rfc6902';
import {
  IDENTITY_VOLUME,
  OWNER_KIND,
  OWNER_NAME,
  REVISION,
  STATUS,
  injectPod,
  serializePatch,
  type Container,
  type PodLike,
} from '../src';
import { DEFAULT_SNAPSHOT, snapshotOf } from './golden-support';

const SNAPSHOTS = [
  DEFAULT_SNAPSHOT,
  snapshotOf('nativeSidecar: "false"'),
  snapshotOf('init:\n  enabled: false'),
];
const OUR_CONTAINERS = ['outrigger-proxy', 'outrigger-init'];
const OUR_LABELS = [REVISION, OWNER_KIND, OWNER_NAME];
const OUR_ANNOTATIONS = [STATUS, OWNER_KIND, OWNER_NAME, 'kubectl.kubernetes.io/default-container'];

const dnsLabel = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}[a-z0-9]$/);
const labelKey = fc.oneof(
  dnsLabel,
  fc.tuple(dnsLabel, dnsLabel).map(([a, b]) => `${a}.io/${b}`),
  fc.constantFrom('a~b', 'x/y~z', '~0~1', 'app.kubernetes.io/name'),
);
const text = fc.string({ maxLength: 12 });
const map = fc.option(fc.dictionary(labelKey, text, { maxKeys: 4 }), { nil: undefined });

const env = fc.array(fc.record({ name: fc.stringMatching(/^[A-Z][A-Z0-9_]{0,8}$/), value: text }), {
  maxLength: 4,
});
// Built once: making arbitraries (stringMatching above all) inside a chain is slow.
const containerBody = fc.record(
  {
    image: fc.stringMatching(/^[a-z]{1,8}(:[0-9]{1,2})?$/),
    env,
    ports: fc.array(fc.record({ containerPort: fc.integer({ min: 1, max: 65535 }) }), {
      maxLength: 2,
    }),
    args: fc.array(text, { maxLength: 3 }),
  },
  { requiredKeys: ['image'] },
);

function containers(prefix: string, min: number, max: number): fc.Arbitrary<Container[]> {
  return fc
    .tuple(
      fc.uniqueArray(dnsLabel, { minLength: min, maxLength: max }),
      fc.array(containerBody, { minLength: max, maxLength: max }),
    )
    .map(([names, bodies]) => names.map((n, i) => ({ name: `${prefix}${n}`, ...bodies[i] })));
}

const podArb: fc.Arbitrary<PodLike> = fc
  .record({
    labels: map,
    annotations: map,
    containers: containers('c-', 1, 4),
    initContainers: fc.option(containers('i-', 0, 2), { nil: undefined }),
    volumes: fc.option(
      fc.uniqueArray(
        dnsLabel.map((n) => ({ name: `v-${n}`, emptyDir: {} })),
        { maxLength: 3, selector: (v) => v.name },
      ),
      {
        nil: undefined,
      },
    ),
    // Only Always: pods that run to completion are skipped when the sidecar would be classic.
    restartPolicy: fc.option(fc.constant('Always'), { nil: undefined }),
  })
  .map(({ labels, annotations, containers, initContainers, volumes, restartPolicy }) => {
    const metadata: Record<string, unknown> = { name: 'generated' };
    if (labels) metadata.labels = labels;
    if (annotations) metadata.annotations = annotations;
    const spec: Record<string, unknown> = { containers };
    if (initContainers) spec.initContainers = initContainers;
    if (volumes) spec.volumes = volumes;
    if (restartPolicy) spec.restartPolicy = restartPolicy;
    return { metadata, spec } as PodLike;
  });

const caseArb = fc.record({
  pod: podArb,
  snapshot: fc.constantFrom(...SNAPSHOTS),
  native: fc.boolean(),
});

function inject(pod: PodLike, c: { snapshot: (typeof SNAPSHOTS)[number]; native: boolean }) {
  return injectPod({
    pod,
    snapshot: c.snapshot,
    namespaceName: 'shop',
    namespace: 'assume-enabled',
    nativeSidecarSupported: c.native,
  });
}

function injected(
  pod: PodLike,
  c: { snapshot: (typeof SNAPSHOTS)[number]; native: boolean },
): { result: PodLike; ops: Operation[] } {
  const r = inject(pod, c);
  if (!r.injected) throw new Error(`expected injection, got ${r.reason}: ${r.detail}`);
  const ops = r.patch as Operation[];
  return { result: applyFastJsonPatch(structuredClone(pod), ops, true, false).newDocument, ops };
}

/** The injected pod with everything injection added taken away again. */
function withoutOurs(pod: PodLike, original: PodLike): PodLike {
  const copy = structuredClone(pod);
  const meta = copy.metadata ?? {};
  for (const [field, ours] of [
    ['labels', OUR_LABELS],
    ['annotations', OUR_ANNOTATIONS],
  ] as const) {
    const m = meta[field];
    if (!m) continue;
    for (const k of ours) if (original.metadata?.[field]?.[k] === undefined) delete m[k];
    if (Object.keys(m).length === 0 && original.metadata?.[field] === undefined) delete meta[field];
  }
  const spec = copy.spec ?? { containers: [] };
  spec.containers = spec.containers.filter((c) => !OUR_CONTAINERS.includes(c.name));
  if (spec.initContainers)
    spec.initContainers = spec.initContainers.filter((c) => !OUR_CONTAINERS.includes(c.name));
  if (spec.initContainers?.length === 0 && original.spec?.initContainers === undefined)
    delete spec.initContainers;
  if (spec.volumes) spec.volumes = spec.volumes.filter((v) => v.name !== IDENTITY_VOLUME);
  if (spec.volumes?.length === 0 && original.spec?.volumes === undefined) delete spec.volumes;
  return copy;
}

const RUNS = { numRuns: 300 };

describe('injection properties', () => {
  it('the patch only adds', () => {
    fc.assert(
      fc.property(caseArb, (c) => injected(c.pod, c).ops.every((o) => o.op === 'add')),
      RUNS,
    );
  });

  it('serializePatch gives exactly the JSON of the patch', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const r = inject(c.pod, c);
        if (!r.injected) throw new Error(r.reason);
        expect(serializePatch(r.patch)).toBe(JSON.stringify(r.patch));
      }),
      RUNS,
    );
  });

  it('a patch shared between pods is the one each pod would get alone', () => {
    // A few owners, so that pods of different shapes share an owner and a cached patch.
    const owned = fc
      .tuple(podArb, fc.constantFrom('', 'web-5d', 'api-7c', 'a-b-c-1'))
      .map(([pod, replicaSet]) =>
        replicaSet === ''
          ? pod
          : {
              ...pod,
              metadata: {
                ...pod.metadata,
                ownerReferences: [
                  { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: replicaSet, controller: true },
                ],
              },
            },
      );
    const texts = ['', 'nativeSidecar: "false"', 'init:\n  enabled: false'];
    const shared = texts.map((t) => snapshotOf(t));
    fc.assert(
      fc.property(owned, fc.integer({ min: 0, max: 2 }), fc.boolean(), (pod, i, native) => {
        const warm = inject(pod, { snapshot: shared[i] ?? DEFAULT_SNAPSHOT, native });
        // A snapshot of its own: nothing cached for it yet.
        const cold = inject(pod, { snapshot: snapshotOf(texts[i] ?? ''), native });
        expect(warm).toEqual(cold);
      }),
      { numRuns: 1000 },
    );
  });

  it('injecting an injected pod changes nothing', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const again = inject(injected(c.pod, c).result, c);
        expect(again).toMatchObject({ injected: false, reason: 'already-injected' });
      }),
      RUNS,
    );
  });

  it('an independent RFC 6902 implementation gives exactly the injected pod', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const { result, ops } = injected(c.pod, c);
        const other = structuredClone(c.pod);
        const errors = applyRfc6902(other, ops as Parameters<typeof applyRfc6902>[1]);
        expect(errors.filter((e) => e !== null)).toEqual([]);
        expect(other).toEqual(result);
      }),
      RUNS,
    );
  });

  it('keeps every value the user wrote, in its order', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const before = structuredClone(c.pod);
        const { result } = injected(c.pod, c);
        expect(c.pod).toEqual(before);
        expect(withoutOurs(result, c.pod)).toEqual(c.pod);
      }),
      RUNS,
    );
  });

  it('gives a Pod that is valid against the Kubernetes schema', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const { result } = injected(c.pod, c);
        new Pod(result as ConstructorParameters<typeof Pod>[0]).validate();
      }),
      { numRuns: 100 },
    );
  });

  it('the schema check can fail: a broken pod is rejected', () => {
    const broken = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'x' },
      spec: { containers: [{ name: 'a', ports: [{ containerPort: 'http' }] }] },
    };
    expect(() => new Pod(broken as never).validate()).toThrow(/containerPort/);
  });
});

describe('patches shared between pods', () => {
  const pod = (annotations: Record<string, unknown> | undefined): PodLike =>
    ({
      metadata: { name: 'p', ...(annotations ? { annotations } : {}) },
      spec: { containers: [{ name: 'app', image: 'app:1' }] },
    }) as PodLike;
  const patchOf = (p: PodLike, snapshot = DEFAULT_SNAPSHOT) => {
    const r = inject(p, { snapshot, native: true });
    if (!r.injected) throw new Error(r.reason);
    return r.patch;
  };

  it('tell a null annotation of ours from a missing one', () => {
    // A null value (an empty YAML value, in a manifest) is not missing: injection keeps it.
    const snapshot = snapshotOf('');
    const withNull = pod({ [OWNER_NAME]: null });
    const without = pod({});
    // Expected from a snapshot of its own each time: nothing kept for it.
    const alone = (p: PodLike) => patchOf(p, snapshotOf(''));
    for (let i = 0; i < 3; i++) expect(patchOf(withNull, snapshot)).toEqual(alone(withNull));
    for (let i = 0; i < 3; i++) expect(patchOf(without, snapshot)).toEqual(alone(without));
  });

  it('are not kept for owners no cluster names, so their memory stays bounded', () => {
    const snapshot = snapshotOf('');
    const long = 'x'.repeat(10_000);
    const first = patchOf(pod({ [OWNER_KIND]: 'Deployment', [OWNER_NAME]: long }), snapshot);
    const second = patchOf(pod({ [OWNER_KIND]: 'Deployment', [OWNER_NAME]: long }), snapshot);
    expect(second).toEqual(first);
    expect(Object.isFrozen(second)).toBe(false);
    // A name a cluster can hold is kept from its second pod on.
    patchOf(pod({ [OWNER_KIND]: 'Deployment', [OWNER_NAME]: 'web' }), snapshot);
    expect(
      Object.isFrozen(patchOf(pod({ [OWNER_KIND]: 'Deployment', [OWNER_NAME]: 'web' }), snapshot)),
    ).toBe(true);
  });
});
