// The owner index assesses again only the owners an event touched. Whatever the order of
// deltas, its answer must equal that of an index fed the final state at once, and one owner's
// event must mark one owner, whatever the size of the cluster.

import fc from 'fast-check';
import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_REVISION,
  INJECT,
  OWNER_KIND,
  OWNER_NAME,
  REVISION,
  STAMPED,
  mustParseConfig,
  type Workload,
} from '@outrigger/shared';
import type { ConfigInForce } from '../src/config/config-map';
import { OwnerIndex } from '../src/watch/owner-index';

const R0 = '0000000000';
const R1 = '1111111111';
const NOW = Date.parse('2026-05-01T12:00:00Z');
const inForce = (revision: string): ConfigInForce => ({
  revision,
  config: mustParseConfig(''),
});

function deployment(name: string, stamp: string, rv: number, ns = 'shop'): Workload {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns, resourceVersion: String(rv), generation: 1 },
    spec: {
      replicas: 1,
      template: {
        metadata: {
          labels: { [STAMPED]: 'true' },
          annotations: { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: name, [CONFIG_REVISION]: stamp },
        },
      },
    },
    status: { observedGeneration: 1, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
  };
}

function pod(name: string, owner: string, revision: string): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'shop',
      resourceVersion: '1',
      labels: { [REVISION]: revision },
      annotations: { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: owner },
    },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

const namespace = (name: string, optedIn: boolean): V1Namespace => ({
  metadata: {
    name,
    resourceVersion: optedIn ? '2' : '1',
    annotations: optedIn ? { [INJECT]: 'enabled' } : {},
  },
});

type Op =
  | { kind: 'workload'; name: string; stamp: string; deleted: boolean }
  | { kind: 'pod'; name: string; owner: string; revision: string; deleted: boolean }
  | { kind: 'namespace'; optedIn: boolean }
  | { kind: 'config'; revision: string };

const names = fc.constantFrom('a', 'b', 'c', 'd');
const rev = fc.constantFrom(R0, R1);
const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('workload' as const),
    name: names,
    stamp: rev,
    deleted: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('pod' as const),
    name: fc.constantFrom('p1', 'p2', 'p3'),
    owner: names,
    revision: rev,
    deleted: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('namespace' as const), optedIn: fc.boolean() }),
  fc.record({ kind: fc.constant('config' as const), revision: rev }),
);

/** Applies an add, change or delete to the cluster's map, and returns the watch's delta for it. */
function change<T>(objects: Map<string, T>, key: string, object: T, deleted: boolean) {
  const old = objects.get(key);
  if (!deleted) objects.set(key, object);
  else objects.delete(key);
  if (deleted) return { changed: [], deleted: old ? [old] : [] };
  return { changed: [object], deleted: [] };
}

/** The cluster as the watches would show it after the ops, and an index fed them one by one. */
function replay(ops: readonly Op[]) {
  let ns = namespace('shop', true);
  let config = inForce(R1);
  const index = new OwnerIndex((n) => (n === 'shop' ? ns : undefined), 'outrigger-system');
  const workloads = new Map<string, Workload>();
  const pods = new Map<string, V1Pod>();
  let rv = 10;
  for (const op of ops) {
    rv += 1;
    if (op.kind === 'workload')
      index.workloadsChanged(
        'Deployment',
        change(workloads, op.name, deployment(op.name, op.stamp, rv), op.deleted),
      );
    else if (op.kind === 'pod')
      index.podsChanged(
        'injected',
        change(pods, op.name, pod(op.name, op.owner, op.revision), op.deleted),
      );
    else if (op.kind === 'namespace') {
      ns = namespace('shop', op.optedIn);
      index.namespacesChanged(['shop']);
    } else config = inForce(op.revision);
    // Steps happen between some events, not after each; events settle at once between them.
    if (rv % 3 === 0) index.assess(config, NOW);
    else if (rv % 3 === 1) index.assessMarked(config, NOW, rv % 2 === 0);
  }
  const fresh = new OwnerIndex((n) => (n === 'shop' ? ns : undefined), 'outrigger-system');
  fresh.workloadsChanged('Deployment', { changed: [...workloads.values()], deleted: [] });
  fresh.podsChanged('injected', { changed: [...pods.values()], deleted: [] });
  return { index, fresh, config };
}

const byKey = (f: ReturnType<OwnerIndex['assess']>) =>
  new Map([...f.active, ...f.inWave].map((a) => [`${a.owner.namespace}/${a.owner.name}`, a]));

describe('OwnerIndex', () => {
  it('assesses as an index fed the final state at once, whatever the order of deltas', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 30 }), (ops) => {
        const { index, fresh, config } = replay(ops);
        const a = index.assess(config, NOW);
        const b = fresh.assess(config, NOW);
        expect(byKey(a)).toEqual(byKey(b));
        expect(new Map(a.states)).toEqual(new Map(b.states));
      }),
      { numRuns: 1000 },
    );
  });

  it("marks one owner for one owner's event, in a cluster of 5,000", () => {
    const ns = namespace('shop', true);
    const index = new OwnerIndex(() => ns, 'outrigger-system');
    const all = Array.from({ length: 5000 }, (_, i) => deployment(`w${i}`, R1, 1));
    index.workloadsChanged('Deployment', { changed: all, deleted: [] });
    const config = inForce(R1);
    const first = index.assess(config, NOW);
    expect(first.states.get('current')).toBe(5000);
    // Every owner is current and quiet: the planner is given none of them.
    expect(first.active).toHaveLength(0);
    index.workloadsChanged('Deployment', { changed: [deployment('w7', R0, 2)], deleted: [] });
    expect(index.pending).toBe(1);
    const next = index.assess(config, NOW);
    expect(next.active.map((a) => a.owner.name)).toEqual(['w7']);
    expect(next.states.get('outdated')).toBe(1);
    expect(next.states.get('current')).toBe(4999);
    // A status change of a quiet owner that leaves it quiet asks for no wave step; one of an
    // owner the planner reads does.
    const status = (name: string, rv: number, ready: number) => {
      const w = deployment(name, name === 'w7' ? R0 : R1, rv);
      return { ...w, status: { ...w.status, readyReplicas: ready } } as Workload;
    };
    index.workloadsChanged('Deployment', { changed: [status('w8', 3, 1)], deleted: [] });
    expect(index.assessMarked(config, NOW, true)).toBe(false);
    expect(index.pending).toBe(0);
    index.workloadsChanged('Deployment', { changed: [status('w7', 3, 1)], deleted: [] });
    expect(index.assessMarked(config, NOW, true)).toBe(true);
    // A new configuration assesses every owner again.
    index.assess(inForce(R0), NOW);
    expect(index.pending).toBe(0);
    expect(index.assess(inForce(R0), NOW).active).toHaveLength(4999);
  });
});

describe('our own writes laid over the cache', () => {
  const key = 'shop/Deployment/web';

  it('are read while the cache still shows the version they replaced, and dropped when it moves on', () => {
    const index = new OwnerIndex(() => undefined, 'outrigger-system');
    const before = deployment('web', R0, 5);
    index.workloadsChanged('Deployment', { changed: [before], deleted: [] });
    const after = deployment('web', R1, 6);
    index.wrote(before, after);
    expect(index.overlaid).toBe(1);
    expect(index.workload(key)).toBe(after);
    // A re-list that still shows the old version keeps the overlay.
    index.workloadsChanged('Deployment', { changed: [deployment('web', R0, 5)], deleted: [] });
    expect(index.overlaid).toBe(1);
    expect(index.workload(key)).toBe(after);
    // The watch brings our write: the overlay goes at once, read or not.
    const seen = deployment('web', R1, 6);
    index.workloadsChanged('Deployment', { changed: [seen], deleted: [] });
    expect(index.overlaid).toBe(0);
    expect(index.workload(key)).toBe(seen);
  });

  it('never outlive a wave: a thousand owners written and seen leave none behind', () => {
    const index = new OwnerIndex(() => undefined, 'outrigger-system');
    const names = Array.from({ length: 1000 }, (_, i) => `d${i}`);
    const old = names.map((n) => deployment(n, R0, 1));
    index.workloadsChanged('Deployment', { changed: old, deleted: [] });
    for (const w of old) index.wrote(w, deployment(w.metadata?.name ?? '', R1, 2));
    expect(index.overlaid).toBe(1000);
    index.workloadsChanged('Deployment', {
      changed: names.map((n) => deployment(n, R1, 2)),
      deleted: [],
    });
    expect(index.overlaid).toBe(0);
  });
});

test("the sets' pins in use are read off every template, hand-written odd keys and values included", () => {
  const index = new OwnerIndex(() => undefined, 'outrigger-system');
  const odd = deployment('odd', R1, 1);
  const annotations = odd.spec?.template?.metadata?.annotations ?? {};
  Object.assign(annotations, {
    'logs.sets.outrigger.dev/config-revision': 'aaaaaaaaaa',
    // Not a set's stamp (no set name before the prefix), and a value no revision looks like.
    '.sets.outrigger.dev/config-revision': 'x',
    'agent.sets.outrigger.dev/config-revision': 'not a revision'.repeat(1000),
    'logs.sets.outrigger.dev/restarted-revision': 'bbbbbbbbbb',
  });
  index.workloadsChanged('Deployment', { changed: [odd], deleted: [] });
  const pinned = index.pinnedSetRevisions();
  expect(pinned.has('logs.aaaaaaaaaa')).toBe(true);
  expect([...pinned].some((k) => k.startsWith('agent.'))).toBe(true);
  expect([...pinned].some((k) => k.startsWith('logs.bbbbbbbbbb'))).toBe(false);
  expect(index.pinnedRevisions()).toEqual(new Set([R1]));
});
