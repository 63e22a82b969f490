// The pod's patch for every set it gets, the proxy's among them, in one pass: the sets' labels
// and annotations, and their containers, init containers and volumes placed in applied order
// (before-app sets at the front of each list, after-app ones at the back).

import { compareSets, type SetPosition } from '../config/sidecar-set';
import type { Container, PodLike } from '../kubernetes/k8s';
import { SKIPPED } from '../names';
import type { CarriedSet } from './carried-sets';
import type { SkipReason } from './decide';
import { addToListEnds, addToMap, pointer, type AddOperation } from './patch';
import type { SetParts } from './set-parts';

/** Names the container `kubectl logs` and `kubectl exec` pick by default. */
export const DEFAULT_CONTAINER = 'kubectl.kubernetes.io/default-container';

/** Whether a set puts a classic container before the app's: the default container needs naming. */
export const takesFirstContainer = (extras: readonly SetParts[]): boolean =>
  extras.some((e) => e.position === 'before-app' && e.containers.length > 0);

/** A pod without a spec, read as one. */
export const NO_SPEC: NonNullable<PodLike['spec']> = { containers: [] };

/** What one set, the proxy's among them, puts into the pod's lists. */
export interface Contribution {
  /**
   * Its init containers go after every other before-app one: a classic proxy's traffic
   * redirection, which would leave the init containers after it without a network until the
   * proxy starts with the app's containers.
   */
  initLast?: boolean;
  order: number;
  name: string;
  position: 'before-app' | 'after-app';
  initContainers: readonly Container[];
  containers: readonly Container[];
  volumes: readonly { name: string }[];
}

export function inAppliedOrder<
  P extends { order: number; name: string },
  S extends { order: number; name: string },
>(proxy: P, extras: readonly S[]): readonly (P | S)[] {
  if (extras.length === 0) return [proxy];
  const at = extras.findIndex(
    (p) => p.order > proxy.order || (p.order === proxy.order && p.name > proxy.name),
  );
  const i = at === -1 ? extras.length : at;
  return [...extras.slice(0, i), proxy, ...extras.slice(i)];
}

export function withSetMarks(
  base: Record<string, string>,
  extras: readonly SetParts[],
  field: 'labels' | 'annotations',
): Record<string, string> {
  if (extras.length === 0) return base;
  const out = { ...base };
  for (const e of extras) Object.assign(out, e[field]);
  return out;
}

/**
 * The list operations of every set in one pass: before-app sets at the front of each list, in
 * applied order, after-app sets at the back, and a volume two sets share (equal, as the
 * configuration's check makes sure) added once. In a pod that carries sets already, each goes
 * among theirs where one pass with all of them would have put it (placedOps).
 */
export function specOps(
  spec: NonNullable<PodLike['spec']>,
  sets: readonly Contribution[],
  carried: readonly CarriedSet[] = [],
): AddOperation[] {
  if (carried.length > 0) return placedOps(spec, sets, carried);
  const front = { init: [] as Container[], main: [] as Container[] };
  const back = { init: [] as Container[], main: [] as Container[] };
  const late: Container[] = [];
  const volumes: { name: string }[] = [];
  const volumeNames = new Set<string>();
  for (const set of sets) {
    const to = set.position === 'before-app' ? front : back;
    if (set.initLast && set.position === 'before-app') late.push(...set.initContainers);
    else to.init.push(...set.initContainers);
    to.main.push(...set.containers);
    for (const v of set.volumes)
      if (!volumeNames.has(v.name)) {
        volumeNames.add(v.name);
        volumes.push(v);
      }
  }
  if (late.length > 0) front.init.push(...late);
  return [
    ...addToListEnds(['spec', 'initContainers'], spec.initContainers, front.init, back.init),
    ...addToListEnds(['spec', 'containers'], spec.containers, front.main, back.main),
    ...addToListEnds(['spec', 'volumes'], spec.volumes, [], volumes),
  ];
}

/** The patch of a pod that gets other sets but not the proxy: their parts and the proxy's skip mark. */
export function setsOnlyPatch(
  pod: PodLike,
  reason: SkipReason,
  extras: readonly SetParts[],
  carried: readonly CarriedSet[],
): AddOperation[] {
  const spec = pod.spec ?? NO_SPEC;
  const annotations = withSetMarks({}, extras, 'annotations');
  const first = spec.containers[0]?.name;
  if (
    first &&
    takesFirstContainer(extras) &&
    pod.metadata?.annotations?.[DEFAULT_CONTAINER] === undefined
  )
    annotations[DEFAULT_CONTAINER] = first;
  return [
    ...metadataOps(
      pod,
      withSetMarks(reason === 'already-injected' ? {} : { [SKIPPED]: reason }, extras, 'labels'),
      annotations,
    ),
    ...specOps(spec, extras, carried),
  ];
}

export function metadataOps(
  pod: PodLike,
  labels: Record<string, string>,
  annotations: Record<string, string>,
): AddOperation[] {
  const meta = pod.metadata;
  if (meta === undefined || meta === null)
    return [{ op: 'add', path: '/metadata', value: { labels, annotations } }];
  return [
    ...addToMap(['metadata', 'labels'], meta.labels, labels),
    ...addToMap(['metadata', 'annotations'], meta.annotations, annotations),
  ];
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

const placedOf = (c: Contribution): Placed => ({
  order: c.order,
  name: c.name,
  position: c.position,
  initLast: c.initLast,
  inits: c.initContainers.map((x) => x.name),
  main: c.containers.map((x) => x.name),
  volumes: c.volumes.map((x) => x.name),
});

/**
 * The list operations of the sets of this pass into a pod that carries others: each list item
 * inserted after the items the pod has of the sets that go before it, counted by name, as the
 * compiled policies place theirs (policy/placement.ts): a before-app set after the earlier
 * before-app sets' items, a classic proxy's init containers after every before-app init
 * container, an after-app set before the later after-app sets' items, a volume before the
 * later sets' volumes.
 */
function placedOps(
  spec: NonNullable<PodLike['spec']>,
  sets: readonly Contribution[],
  carried: readonly CarriedSet[],
): AddOperation[] {
  const all: Placed[] = [...carried, ...sets.map(placedOf)];
  const init = new PlacedList(['spec', 'initContainers'], spec.initContainers);
  const main = new PlacedList(['spec', 'containers'], spec.containers);
  const volumes = new PlacedList(['spec', 'volumes'], spec.volumes);
  for (const set of sets) {
    const others = all.filter((o) => o.name !== set.name);
    const before = (o: Placed) => compareSets(o, set) < 0;
    const inits = (o: Placed) => (o.initLast ? [] : o.inits);
    if (set.position === 'after-app') {
      const later = others.filter((o) => o.position === 'after-app' && !before(o));
      init.insert(set.initContainers, init.size() - init.count(later.flatMap(inits)));
      main.insert(set.containers, main.size() - main.count(later.flatMap((o) => o.main)));
    } else {
      const earlier = others.filter((o) => o.position === 'before-app' && before(o));
      const front = set.initLast ? others.filter((o) => o.position === 'before-app') : earlier;
      init.insert(set.initContainers, init.count(front.flatMap(inits)));
      main.insert(set.containers, main.count(earlier.flatMap((o) => o.main)));
    }
    const fresh = set.volumes.filter((v) => !volumes.has(v.name));
    const later = others.filter((o) => !before(o)).flatMap((o) => o.volumes);
    volumes.insert(fresh, volumes.size() - volumes.count(later));
  }
  return [...init.ops, ...main.ops, ...volumes.ops];
}

/** A list of the pod as the operations so far leave it, by name. */
class PlacedList {
  readonly ops: AddOperation[] = [];
  private readonly names: string[];
  /** The names as a set, made the first time has() asks. */
  private present: Set<string> | undefined;
  private created: boolean;
  constructor(
    private readonly path: readonly string[],
    existing: readonly { name: string }[] | undefined,
  ) {
    this.names = (existing ?? []).map((x) => x.name);
    this.created = existing !== undefined && existing !== null;
  }
  size(): number {
    return this.names.length;
  }
  has(name: string): boolean {
    return (this.present ??= new Set(this.names)).has(name);
  }
  /** How many of the list's items are named in `names`: linear in the list, however long. */
  count(names: readonly string[]): number {
    if (names.length === 0) return 0;
    const named = new Set(names);
    let n = 0;
    for (const name of this.names) if (named.has(name)) n++;
    return n;
  }
  insert(items: readonly { name: string }[], at: number): void {
    if (items.length === 0) return;
    if (!this.created) this.ops.push({ op: 'add', path: pointer(this.path), value: [] });
    this.created = true;
    items.forEach((value, k) => {
      this.ops.push({ op: 'add', path: pointer([...this.path, at + k]), value });
      this.names.splice(at + k, 0, value.name);
      this.present?.add(value.name);
    });
  }
}
