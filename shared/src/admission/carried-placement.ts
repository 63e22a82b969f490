// Where the sets of one pass go in a pod that carries others already: each list item after the
// items the pod has of the sets that go before it, counted by name, as the compiled policies
// place theirs (policy/placement.ts), so that the pod comes out as one pass with every set
// would have made it. A container belongs to the set that adds it; a volume goes by the
// configuration's order of volumes (volume-order.ts), as one pass puts them.

import { compareSets, type SetPosition } from '../config/sidecar-set';
import type { Container, PodLike } from '../kubernetes/k8s';
import type { CarriedSet } from './carried-sets';
import { pointer, type AddOperation } from './patch';
import type { VolumeOrder } from './volume-order';

/** What one set, the proxy's among them, puts into the pod's lists in one pass. */
export interface PassSet {
  /**
   * Its init containers go after every other before-app one: a classic proxy's traffic
   * redirection, which would leave the init containers after it without a network until the
   * proxy starts with the app's containers.
   */
  initLast?: boolean;
  order: number;
  name: string;
  position: SetPosition;
  initContainers: readonly Container[];
  containers: readonly Container[];
  volumes: readonly { name: string }[];
}

/** A set as placement sees it: its place, and the names it puts in each list. */
interface Placed {
  order: number;
  name: string;
  position: SetPosition;
  initLast?: boolean;
  inits: readonly string[];
  main: readonly string[];
  volumes: readonly string[];
}

const placedOf = (c: PassSet): Placed => ({
  order: c.order,
  name: c.name,
  position: c.position,
  initLast: c.initLast,
  inits: c.initContainers.map((x) => x.name),
  main: c.containers.map((x) => x.name),
  volumes: c.volumes.map((x) => x.name),
});

/** Each name's set, the first in applied order that lists it: built once per pass. */
function owners(all: readonly Placed[], names: (p: Placed) => readonly string[]) {
  const owner = new Map<string, Placed>();
  for (const p of [...all].sort(compareSets))
    for (const n of names(p)) if (!owner.has(n)) owner.set(n, p);
  return owner;
}

/**
 * The list operations of the sets of this pass into a pod that carries others: a before-app
 * set after the earlier before-app sets' items, a classic proxy's init containers after every
 * other before-app init container, an after-app set before the later after-app sets' items, a
 * volume before the volumes that come after it in `order`. Linear in the pod's lists for each set of the pass,
 * however many names the carried sets' annotations list.
 */
export function placedOps(
  spec: NonNullable<PodLike['spec']>,
  sets: readonly PassSet[],
  carried: readonly CarriedSet[],
  order: VolumeOrder,
): AddOperation[] {
  const all: Placed[] = [...carried, ...sets.map(placedOf)];
  const init = new PlacedList(
    ['spec', 'initContainers'],
    spec.initContainers,
    owners(all, (p) => p.inits),
  );
  const main = new PlacedList(
    ['spec', 'containers'],
    spec.containers,
    owners(all, (p) => p.main),
  );
  const volumes = new PlacedList(
    ['spec', 'volumes'],
    spec.volumes,
    owners(all, (p) => p.volumes),
  );
  for (const set of sets) {
    const before = (o: Placed) => o.name !== set.name && compareSets(o, set) < 0;
    const after = (o: Placed) => o.name !== set.name && compareSets(o, set) > 0;
    const counted = (o: Placed) => !o.initLast;
    if (set.position === 'after-app') {
      const later = (o: Placed) => o.position === 'after-app' && after(o);
      init.insert(set.initContainers, init.size() - init.count((o) => later(o) && counted(o)));
      main.insert(set.containers, main.size() - main.count(later));
    } else {
      const earlier = (o: Placed) => o.position === 'before-app' && before(o);
      const front = set.initLast
        ? (o: Placed) => o.position === 'before-app' && o.name !== set.name && counted(o)
        : (o: Placed) => earlier(o) && counted(o);
      init.insert(set.initContainers, init.count(front));
      main.insert(set.containers, main.count(earlier));
    }
    for (const v of order.sorted(
      set.volumes.filter((x) => !volumes.has(x.name)),
      set,
    )) {
      // Before the sets' volumes ranked after it; the pod's own (no set's) stay first.
      const rank = order.rank(v.name, set);
      volumes.insert([v], volumes.size() - volumes.count((o, name) => order.rank(name, o) > rank));
    }
  }
  return [...init.ops, ...main.ops, ...volumes.ops];
}

/** A list of the pod as the operations so far leave it, by name, with each name's set. */
class PlacedList {
  readonly ops: AddOperation[] = [];
  private readonly names: string[];
  private readonly present: Set<string>;
  private created: boolean;
  constructor(
    private readonly path: readonly string[],
    existing: readonly unknown[] | undefined,
    private readonly owner: ReadonlyMap<string, Placed>,
  ) {
    this.names = (existing ?? []).map((x) =>
      typeof x === 'object' && x !== null && typeof (x as { name?: unknown }).name === 'string'
        ? (x as { name: string }).name
        : '',
    );
    this.present = new Set(this.names);
    this.created = existing !== undefined && existing !== null;
  }
  size(): number {
    return this.names.length;
  }
  has(name: string): boolean {
    return this.present.has(name);
  }
  /** How many of the list's items belong to a set that `which` chooses: one look at the list. */
  count(which: (p: Placed, name: string) => boolean): number {
    let n = 0;
    for (const name of this.names) {
      const o = this.owner.get(name);
      if (o && which(o, name)) n++;
    }
    return n;
  }
  insert(items: readonly { name: string }[], at: number): void {
    if (items.length === 0) return;
    if (!this.created) this.ops.push({ op: 'add', path: pointer(this.path), value: [] });
    this.created = true;
    items.forEach((value, k) => {
      this.ops.push({ op: 'add', path: pointer([...this.path, at + k]), value });
      this.names.splice(at + k, 0, value.name);
      this.present.add(value.name);
    });
  }
}
