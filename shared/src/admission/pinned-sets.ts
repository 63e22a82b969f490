// Which revision of each sidecar set a pod gets: the one its template is stamped with
// (`<set>.sets.outrigger.dev/config-revision`, set-stamp.ts) while the history holds it, else the
// current one, with a warning when the stamped one is no longer held. The proxy's revision is
// chosen by revision-history.ts (chooseRevision); this swaps the sets' parts in the snapshot it
// chose, keeping each set's selectors and rollout as configured now.

import type { SetRevisionContent } from '../config/set-history';
import type { Labels } from '../kubernetes/k8s';
import { frozenSnapshot, type ConfigSnapshot } from './inject';
import { appliedSets } from './applied-sets';

/** The sets' revisions the history holds, by set and revision. */
export type HeldSets = ReadonlyMap<string, ReadonlyMap<string, SetRevisionContent>>;

/** Snapshots with pinned sets, per snapshot and combination: a few in any real fleet. */
const variants = new WeakMap<ConfigSnapshot, Map<string, ConfigSnapshot>>();
const MAX_VARIANTS = 256;

export interface PinnedSetsChoice {
  snapshot: ConfigSnapshot;
  /** Sets pinned to a revision the history no longer holds: they get the current one. */
  fallbacks: { set: string; requested: string }[];
}

/**
 * The snapshot with each set at the revision the pod's annotations ask for. `annotations` are
 * the pod's when a controller made it from a template, undefined otherwise (a bare pod's stamp
 * is its creator's word alone, as for the proxy).
 */
export function choosePinnedSets(
  snapshot: ConfigSnapshot,
  annotations: Labels | undefined,
  held: HeldSets | undefined,
): PinnedSetsChoice {
  const sets = appliedSets(snapshot.config);
  if (sets.length === 0 || !annotations) return { snapshot, fallbacks: [] };
  const pins: [string, SetRevisionContent][] = [];
  const fallbacks: PinnedSetsChoice['fallbacks'] = [];
  for (const a of sets) {
    const requested = annotations[a.keys.configRevision];
    if (!requested || requested === a.revision) continue;
    const content = held?.get(a.set.name)?.get(requested);
    if (content) pins.push([requested, content]);
    else fallbacks.push({ set: a.set.name, requested });
  }
  return { snapshot: pins.length > 0 ? variant(snapshot, pins) : snapshot, fallbacks };
}

function variant(snapshot: ConfigSnapshot, pins: [string, SetRevisionContent][]): ConfigSnapshot {
  const key = pins.map(([revision, c]) => `${c.name}=${revision}`).join(',');
  let known = variants.get(snapshot);
  const hit = known?.get(key);
  if (hit) return hit;
  const byName = new Map(pins.map(([, c]) => [c.name, c]));
  const config = {
    ...snapshot.config,
    sets: snapshot.config.sets.map((s) => {
      const pinned = byName.get(s.name);
      return pinned ? { ...s, ...pinned } : s;
    }),
  };
  const made = frozenSnapshot(config, snapshot.revision);
  if (!known) variants.set(snapshot, (known = new Map<string, ConfigSnapshot>()));
  if (known.size >= MAX_VARIANTS) known.clear();
  known.set(key, made);
  return made;
}

/** The warning for a set whose pinned revision the history no longer holds. */
export const setFallbackWarning = (f: { set: string; requested: string }): string =>
  `the pod template is pinned to revision ${f.requested} of set ${f.set}, which the revision history no longer holds; injected with its current revision (raise rollout.history to keep more revisions)`;
