// The pod's patch for every set it gets, the proxy's among them, in one pass: the sets' labels
// and annotations, and their containers, init containers and volumes placed in applied order
// (before-app sets at the front of each list, after-app ones at the back).

import type { Container, PodLike } from '../kubernetes/k8s';
import { SKIPPED } from '../names';
import type { CarriedSet } from './carried-sets';
import type { SkipReason } from './decide';
import { placedOps, type PassSet } from './carried-placement';
import { addToListEnds, addToMap, type AddOperation } from './patch';
import type { SetParts } from './set-parts';
import type { VolumeOrder } from './volume-order';

/** Names the container `kubectl logs` and `kubectl exec` pick by default. */
export const DEFAULT_CONTAINER = 'kubectl.kubernetes.io/default-container';

/** Whether a set puts a classic container before the app's: the default container needs naming. */
export const takesFirstContainer = (extras: readonly SetParts[]): boolean =>
  extras.some((e) => e.position === 'before-app' && e.containers.length > 0);

/** A pod without a spec, read as one. */
export const NO_SPEC: NonNullable<PodLike['spec']> = { containers: [] };

/** What one set, the proxy's among them, puts into the pod's lists. */
export type Contribution = PassSet;

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
 * applied order, after-app sets at the back, and the volumes at the back in the configuration's
 * order (volume-order.ts), a volume two sets share (equal, as the configuration's check makes
 * sure) added once. In a pod that carries sets already, each goes among theirs where one pass
 * with all of them would have put it (placedOps).
 */
export function specOps(
  spec: NonNullable<PodLike['spec']>,
  sets: readonly Contribution[],
  order: VolumeOrder,
  carried?: readonly CarriedSet[],
): AddOperation[] {
  if (carried) return placedOps(spec, sets, carried, order);
  const front = { init: [] as Container[], main: [] as Container[] };
  const back = { init: [] as Container[], main: [] as Container[] };
  const late: Container[] = [];
  const volumes: { volume: { name: string }; rank: number; i: number }[] = [];
  const volumeNames = new Set<string>();
  for (const set of sets) {
    const to = set.position === 'before-app' ? front : back;
    if (set.initLast && set.position === 'before-app') late.push(...set.initContainers);
    else to.init.push(...set.initContainers);
    to.main.push(...set.containers);
    for (const v of set.volumes)
      if (!volumeNames.has(v.name)) {
        volumeNames.add(v.name);
        volumes.push({ volume: v, rank: order.rank(v.name, set), i: volumes.length });
      }
  }
  if (late.length > 0) front.init.push(...late);
  volumes.sort((a, b) => a.rank - b.rank || a.i - b.i);
  return [
    ...addToListEnds(['spec', 'initContainers'], spec.initContainers, front.init, back.init),
    ...addToListEnds(['spec', 'containers'], spec.containers, front.main, back.main),
    ...addToListEnds(
      ['spec', 'volumes'],
      spec.volumes,
      [],
      volumes.map((v) => v.volume),
    ),
  ];
}

/** The patch of a pod that gets other sets but not the proxy: their parts and the proxy's skip mark. */
export function setsOnlyPatch(
  pod: PodLike,
  reason: SkipReason,
  extras: readonly SetParts[],
  placement: { order: VolumeOrder; carried: readonly CarriedSet[] | undefined },
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
    ...specOps(spec, extras, placement.order, placement.carried),
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
