// The writes that record a restart in the cluster, as JSON merge patches (null deletes a key):
// the stamp (or its removal), the restart's records on the workload, and its completion.

import { formatTime } from '../kubernetes/time';
import { isRecord } from '../kubernetes/k8s';
import {
  CANARY_REVISION,
  COMPLETED_REVISION,
  CONFIG_REVISION,
  HEALED_AT,
  HEALED_REVISION,
  OWNER_KIND,
  OWNER_NAME,
  RESTARTED_AT,
  RESTARTED_REVISION,
  ROLLED_BACK_FROM,
  FORCED_ROLLBACK,
  STAMPED,
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

function merge(a: Patch, b: Patch): Patch {
  const out: Patch = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const prev = out[k];
    out[k] = isRecord(prev) && isRecord(v) ? merge(prev, v) : v;
  }
  return out;
}

const STAMP_ANNOTATIONS = [OWNER_KIND, OWNER_NAME, CONFIG_REVISION];

/** The template half of a restart: the stamp (or, when shedding, its removal). */
function templatePatch(workload: Workload, order: RestartOrder, at: string): Patch {
  const meta = templateOf(workload)?.metadata ?? {};
  // The template must change or nothing rolls: a heal, pods left behind a current stamp, or
  // shedding from a template that carries no stamp to take off.
  const nudge = { spec: { template: { metadata: { annotations: { [RESTARTED_AT]: at } } } } };
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
    return stamped ? off : merge(off, nudge);
  }
  const stamp = desiredStamp(workload, order.revision);
  const base = stampMergePatch(stamp);
  return stampEquals(readStamp(workload), stamp) ? merge(base, nudge) : base;
}

/** The canary and rollback marks a restart sets, or clears when they no longer hold. */
function waveMarks(workload: Workload, order: RestartOrder): Record<string, string | null> {
  const had = workload.metadata?.annotations ?? {};
  const marks: Record<string, string | null> = {};
  if (order.canary) marks[CANARY_REVISION] = order.revision;
  else if (had[CANARY_REVISION] !== undefined) marks[CANARY_REVISION] = null;
  if (order.kind === 'rollback' && order.from) marks[ROLLED_BACK_FROM] = order.from;
  else if (had[ROLLED_BACK_FROM] !== undefined) marks[ROLLED_BACK_FROM] = null;
  // What a forced rollback did belongs to the rollback it finished: any new restart clears it.
  if (had[FORCED_ROLLBACK] !== undefined) marks[FORCED_ROLLBACK] = null;
  return marks;
}

export interface RestartPatchInput {
  workload: Workload;
  order: RestartOrder;
  nowMs: number;
}

/**
 * The one write that restarts an owner and records it. It carries the resourceVersion the
 * decision was made on, so a write from a stale cache fails with a conflict instead of
 * restarting an owner whose restart it has not seen yet.
 */
export function restartPatch({ workload, order, nowMs }: RestartPatchInput): Patch {
  const at = formatTime(nowMs);
  const annotations: Record<string, string | null> = {
    [RESTARTED_REVISION]: order.revision,
    [RESTARTED_AT]: at,
    ...(order.kind === 'heal' ? { [HEALED_REVISION]: order.revision, [HEALED_AT]: at } : {}),
    ...waveMarks(workload, order),
  };
  const rv = workload.metadata?.resourceVersion;
  const metadata = {
    ...(rv ? { resourceVersion: rv } : {}),
    labels: { [COMPLETED_REVISION]: null },
    annotations,
  };
  return merge({ metadata }, templatePatch(workload, order, at));
}

/** Records that our restart to `revision` completed: a label, so no generation moves. */
export function completionPatch(revision: string): Patch {
  return { metadata: { labels: { [COMPLETED_REVISION]: revision } } };
}
