// Where one set's containers, init containers and volumes go in a pod, as CEL, so that every
// set's policy can run alone and in any order and the pod still comes out as the webhook lays
// it out in one pass (set-patch.ts, specOps): before-app sets at the front of each list in
// applied order, a classic proxy's init container after every other before-app one, after-app
// sets at the back in applied order, volumes at the back in one order of every set's volumes
// (admission/volume-order.ts). A policy counts the containers of the
// sets that go before it (or after it) that the pod already has, and inserts there.

import type { Container } from '../kubernetes/k8s';
import type { SetPosition } from '../config/sidecar-set';
import { celLiteral, celStrings, concat, insertAt, addOp, when } from './cel';
import { variable } from './pod-facts';
import { VolumeOrder } from '../admission/volume-order';

/** What one set puts into a pod at one revision. */
export interface PlacedParts {
  readonly position: SetPosition;
  /** Its init containers go after every other before-app set's (a classic proxy's). */
  readonly initLast: boolean;
  readonly initContainers: readonly Container[];
  readonly containers: readonly Container[];
  readonly volumes: readonly { name: string }[];
}

/** Every name a set uses, over every revision compiled, in applied order of sets. */
export interface Footprint {
  readonly set: string;
  readonly order: number;
  readonly position: SetPosition;
  /** Its init containers, but a classic proxy's, which go after every other before-app set's. */
  readonly inits: ReadonlySet<string>;
  readonly main: ReadonlySet<string>;
  readonly volumes: ReadonlySet<string>;
}

/** The footprint of a set from the parts of each of its revisions compiled. */
export function footprint(
  set: { name: string; order: number; position: SetPosition },
  parts: readonly PlacedParts[],
): Footprint {
  const inits = new Set<string>();
  const main = new Set<string>();
  const volumes = new Set<string>();
  for (const p of parts) {
    if (!p.initLast) for (const c of p.initContainers) inits.add(c.name);
    for (const c of p.containers) main.add(c.name);
    for (const x of p.volumes) volumes.add(x.name);
  }
  return { set: set.name, order: set.order, position: set.position, inits, main, volumes };
}

const before = (a: Footprint, b: { order: number; set: string }): boolean =>
  a.order < b.order || (a.order === b.order && a.set < b.set);

/** The names of `pick` over the sets chosen by `which`. */
function namesOf(
  all: readonly Footprint[],
  which: (f: Footprint) => boolean,
  pick: (f: Footprint) => ReadonlySet<string>,
): string[] {
  const out = new Set<string>();
  for (const f of all) if (which(f)) for (const n of pick(f)) out.add(n);
  return [...out].sort();
}

/** How many of the list's items (CEL) are named in `names`. */
const counted = (list: string, names: readonly string[]): string =>
  names.length === 0 ? '0' : `size(${list}.filter(c, c.name in ${celStrings(names)}))`;

/** The CEL operations that put `parts` of set `own` into the pod, beside the other sets'. */
export function specOps(own: Footprint, parts: PlacedParts, all: readonly Footprint[]): string {
  const others = all.filter((f) => f.set !== own.set);
  const front = parts.position === 'before-app';
  const earlier = (f: Footprint) => f.position === 'before-app' && before(f, own);
  const later = (f: Footprint) => f.position === 'after-app' && before(own, f);
  const inits = variable('initContainers');
  const containers = variable('containers');
  let initAt: string;
  if (!front)
    initAt = `size(${inits}) - ${counted(
      inits,
      namesOf(others, later, (f) => f.inits),
    )}`;
  else if (parts.initLast)
    initAt = counted(
      inits,
      namesOf(
        others,
        (f) => f.position === 'before-app',
        (f) => f.inits,
      ),
    );
  else
    initAt = counted(
      inits,
      namesOf(others, earlier, (f) => f.inits),
    );
  const mainAt = front
    ? counted(
        containers,
        namesOf(others, earlier, (f) => f.main),
      )
    : `size(${containers}) - ${counted(
        containers,
        namesOf(others, later, (f) => f.main),
      )}`;
  return concat([
    ...listOps(['spec', 'initContainers'], initAt, parts.initContainers),
    ...listOps(['spec', 'containers'], mainAt, parts.containers),
    ...volumeOps(parts.volumes, own, all),
  ]);
}

/** The list created when the pod has none, then the items inserted from `at`. */
function listOps(path: readonly string[], at: string, items: readonly unknown[]): string[] {
  if (items.length === 0) return [];
  const field = path[path.length - 1] ?? '';
  return [
    when(`!has(object.spec.${field})`, `[${addOp(path, '[]')}]`),
    insertAt(path, at, items.map(celLiteral)),
  ];
}

/**
 * The set's volumes the pod does not have by name (a volume two sets share is the same volume:
 * the configuration's check), each before the volumes that come after it in the one order of
 * every set's volumes (admission/volume-order.ts), so that whichever policy adds a shared volume
 * puts it where the first set that declares it would.
 */
function volumeOps(
  volumes: readonly { name: string }[],
  own: Footprint,
  all: readonly Footprint[],
): string[] {
  if (volumes.length === 0) return [];
  // The set's own in this revision's order (the webhook's, for a pod pinned to it), then its
  // other revisions'; the other sets' over every revision compiled, the current one's first.
  const mine = volumes.map((v) => v.name);
  const order = new VolumeOrder(
    all.map((f) => ({
      order: f.order,
      name: f.set,
      volumes: f.set === own.set ? [...new Set([...mine, ...f.volumes])] : [...f.volumes],
    })),
  );
  const by = { name: own.set };
  const declared = order.names();
  const vols = variable('volumes');
  const sorted = order.sorted(volumes, by);
  const ops = sorted.map((x, i) => {
    const missing = `!(${celLiteral(x.name)} in ${vols})`;
    const earlierAdded = sorted.slice(0, i).map((y) => y.name);
    const shift =
      earlierAdded.length === 0
        ? '0'
        : `size(${celStrings(earlierAdded)}.filter(n, !(n in ${vols})))`;
    const rank = order.rank(x.name, by);
    const after = declared.filter((n) => (order.known(n) ?? -1) > rank).sort();
    const tail = after.length === 0 ? '0' : `size(${vols}.filter(n, n in ${celStrings(after)}))`;
    return when(
      missing,
      insertAt(['spec', 'volumes'], `size(${vols}) - ${tail} + ${shift}`, [celLiteral(x)]),
    );
  });
  return [when('!has(object.spec.volumes)', `[${addOp(['spec', 'volumes'], '[]')}]`), ...ops];
}
