// One order for the volumes the sets add, known before any pod is seen: by the first set in
// applied order that declares each (whether or not it applies to the pod), then by its place in
// that set's list. A volume two sets share sits in the first one's place however it got into the
// pod: one webhook pass, a later pass over a pod that carries sets, or the compiled admission
// policies, which the API server runs in no fixed order (policy/placement.ts). Without one, a
// pod's volumes would depend on which of two policies ran first.

import type { Config } from '../config/config';
import { compareSets, DEFAULT_SET, DEFAULT_SET_ORDER } from '../config/sidecar-set';
import { IDENTITY_VOLUME } from '../names';
import { appliedSets } from './applied-sets';

/** A set as the order sees it: its place and its volumes' names, in its own order. */
export interface VolumeDeclarer {
  readonly order: number;
  readonly name: string;
  readonly volumes: readonly string[];
}

/** Room for each set's volumes in the ranks (a set holds far fewer). */
const BLOCK = 1_000_000;

export class VolumeOrder {
  private readonly ranks = new Map<string, number>();
  private readonly setIndex = new Map<string, number>();

  constructor(sets: readonly VolumeDeclarer[]) {
    [...sets].sort(compareSets).forEach((set, i) => {
      this.setIndex.set(set.name, i);
      set.volumes.forEach((name, k) => {
        if (!this.ranks.has(name)) this.ranks.set(name, i * BLOCK + k);
      });
    });
  }

  /** Every declared volume's name, in this order. */
  names(): string[] {
    return [...this.ranks.entries()].sort((a, b) => a[1] - b[1]).map(([name]) => name);
  }

  /** A declared volume's rank; undefined for one no set declares (the pod's own). */
  known(name: string): number | undefined {
    return this.ranks.get(name);
  }

  /**
   * The rank of volume `name` added by set `by`: its declared rank, or, for one the order was
   * not built with (a pinned revision's), the end of that set's place.
   */
  rank(name: string, by: { name: string }): number {
    return (
      this.ranks.get(name) ?? ((this.setIndex.get(by.name) ?? this.setIndex.size) + 1) * BLOCK - 1
    );
  }

  /** `items` of set `by`, in this order (a stable sort: equal ranks keep their list's order). */
  sorted<T extends { name: string }>(items: readonly T[], by: { name: string }): T[] {
    return items
      .map((item, i) => ({ item, i, r: this.rank(item.name, by) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((x) => x.item);
  }
}

const ofConfig = new WeakMap<Config, VolumeOrder>();

/** The order of the volumes the configuration's sets declare, the proxy's among them. */
export function volumeOrderOf(config: Config): VolumeOrder {
  let order = ofConfig.get(config);
  if (!order) {
    order = new VolumeOrder([
      { order: DEFAULT_SET_ORDER, name: DEFAULT_SET, volumes: [IDENTITY_VOLUME] },
      ...appliedSets(config).map((a) => ({
        order: a.set.order,
        name: a.set.name,
        volumes: a.volumeNames,
      })),
    ]);
    ofConfig.set(config, order);
  }
  return order;
}
