// The writes that record a restart in the cluster, as JSON merge patches (null deletes a key):
// the stamp (or its removal), the restart's records on the workload, and its completion.

import { formatTime } from '../kubernetes/time';
import { isRecord } from '../kubernetes/k8s';
import {
  CONFIG_REVISION,
  OWNER_KIND,
  OWNER_NAME,
  PROXY_KEYS,
  STAMPED,
  type WaveKeys,
} from '../names';
import {
  desiredStamp,
  readStamp,
  stampEquals,
  stampMergePatch,
  templateOf,
} from '../admission/stamp';
import type { Workload } from './rollout-status';
import type { RestartOrder } from './wave';

type Patch = Record<string, unknown>;

export function mergePatches(a: Patch, b: Patch): Patch {
  const out: Patch = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isRecord(prev) && isRecord(v) ? mergePatches(prev, v) : v;
  }
  return out;
}

const STAMP_ANNOTATIONS = [OWNER_KIND, OWNER_NAME, CONFIG_REVISION];

const templateAnnotations = (annotations: Record<string, string | null>): Patch => ({
  spec: { template: { metadata: { annotations } } },
});

/** A set's stamp: its own annotation beside the proxy's stamp, which it leaves alone. */
function setTemplatePatch(
  had: string | undefined,
  order: RestartOrder,
  keys: WaveKeys,
  nudge: Patch,
): Patch {
  // A shed always nudges: the webhook may put back a stamp it still thinks wanted (a namespace
  // cache behind an opt-out), and the template must change for anything to roll.
  if (order.kind === 'shed')
    return had === undefined
      ? nudge
      : mergePatches(nudge, templateAnnotations({ [keys.configRevision]: null }));
  return had === order.revision
    ? nudge
    : templateAnnotations({ [keys.configRevision]: order.revision });
}

/** The template half of a restart: the stamp (or, when shedding, its removal). */
function templatePatch(workload: Workload, order: RestartOrder, at: string, keys: WaveKeys): Patch {
  const meta = templateOf(workload)?.metadata ?? {};
  // The template must change or nothing rolls: a heal, pods left behind a current stamp, or
  // shedding from a template that carries no stamp to take off.
  const nudge = templateAnnotations({ [keys.restartedAt]: at });
  if (keys !== PROXY_KEYS)
    return setTemplatePatch(meta.annotations?.[keys.configRevision], order, keys, nudge);
  if (order.kind === 'shed') {
    const off = {
      spec: {
        template: {
          metadata: {
            labels: { [STAMPED]: null },
            annotations: Object.fromEntries(STAMP_ANNOTATIONS.map((k) => [k, null])),
          },
        },
      },
    };
    const stamped =
      meta.labels?.[STAMPED] !== undefined ||
      STAMP_ANNOTATIONS.some((k) => meta.annotations?.[k] !== undefined);
    return stamped ? off : mergePatches(off, nudge);
  }
  const stamp = desiredStamp(workload, order.revision);
  const base = stampMergePatch(stamp);
  return stampEquals(readStamp(workload), stamp) ? mergePatches(base, nudge) : base;
}

/** The canary and rollback marks a restart sets, or clears when they no longer hold. */
function waveMarks(
  workload: Workload,
  order: RestartOrder,
  keys: WaveKeys,
): Record<string, string | null> {
  const had = workload.metadata?.annotations ?? {};
  const marks: Record<string, string | null> = {};
  if (order.canary) marks[keys.canaryRevision] = order.revision;
  else if (had[keys.canaryRevision] !== undefined) marks[keys.canaryRevision] = null;
  if (order.kind === 'rollback' && order.from) marks[keys.rolledBackFrom] = order.from;
  else if (had[keys.rolledBackFrom] !== undefined) marks[keys.rolledBackFrom] = null;
  // What a forced rollback did belongs to the rollback it finished: any new restart clears it.
  if (had[keys.forcedRollback] !== undefined) marks[keys.forcedRollback] = null;
  return marks;
}

export interface RestartPatchInput {
  workload: Workload;
  order: RestartOrder;
  nowMs: number;
  /** The names of the order's set (default: the proxy's). */
  keys?: WaveKeys;
}

/**
 * The one write that restarts an owner and records it. It carries the resourceVersion the
 * decision was made on, so a write from a stale cache fails with a conflict instead of
 * restarting an owner whose restart it has not seen yet.
 */
export function restartPatch({
  workload,
  order,
  nowMs,
  keys = PROXY_KEYS,
}: RestartPatchInput): Patch {
  const at = formatTime(nowMs);
  const annotations: Record<string, string | null> = {
    [keys.restartedRevision]: order.revision,
    [keys.restartedAt]: at,
    ...(order.kind === 'heal'
      ? { [keys.healedRevision]: order.revision, [keys.healedAt]: at }
      : {}),
    ...waveMarks(workload, order, keys),
  };
  const rv = workload.metadata?.resourceVersion;
  const metadata = {
    ...(rv ? { resourceVersion: rv } : {}),
    labels: { [keys.completedRevision]: null },
    annotations,
  };
  return mergePatches({ metadata }, templatePatch(workload, order, at, keys));
}

/** Records that our restart to `revision` completed: a label, so no generation moves. */
export function completionPatch(revision: string, keys: WaveKeys = PROXY_KEYS): Patch {
  return { metadata: { labels: { [keys.completedRevision]: revision } } };
}

/**
 * The stamps that say what new pods get already, for the sets (and the proxy) whose stamp the
 * template lacks: written with a restart made for another set, so that the pods it makes are
 * pinned to what they get anyway and no later wave restarts the owner only to stamp it.
 */
export function missingStampsPatch(stamps: Readonly<Record<string, string>>): Patch {
  return Object.keys(stamps).length === 0 ? {} : templateAnnotations({ ...stamps });
}
