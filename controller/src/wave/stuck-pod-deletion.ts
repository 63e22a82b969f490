// The forced rollback's one write of its own: deleting a pod a rollback left not Ready on the
// failed revision, so that its StatefulSet recreates it from the reverted template
// (shared/src/rollout/forced-rollback.ts decides which pod, and when). The pod's uid and resourceVersion
// are preconditions: a pod that changed since the plan saw it (became Ready, was replaced) is
// not deleted, and the wave decides again. A pod already gone is no failure. Then the owner
// records it (FORCED_ROLLBACK, which `outrigger status` reads) and an Event says what was done.

import { httpStatus } from '@outrigger/kube';
import {
  PROXY_KEYS,
  forcedRecordPatch,
  ownerKey,
  readForcedRecord,
  type PodDeletion,
  type WaveKeys,
  type Workload,
} from '@outrigger/shared';
import { workloadSubject, type EventRecorder } from '../events';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import { FORCED_ROLLBACK_EVENT, forcedRollbackMessage } from './wave-messages';
import type { WaveWrites } from './wave-writes';

/** What a forced rollback reports through, given once when the wave is built. */
export interface ForcedRollbackDeps {
  events: EventRecorder;
  metrics: ControllerMetrics;
  logger: Logger;
}

/** The pod and its owner, as the step that deletes it holds them. */
export interface StuckPod {
  deletion: PodDeletion;
  workload: Workload;
  /** The names of the wave whose rollback it finishes (default: the proxy's). */
  keys?: WaveKeys;
}

/** Deletes the pod of `deletion`; a refusal other than 404 is thrown for the wave to hold. */
export async function deleteStuckPod(
  deps: ForcedRollbackDeps,
  writes: WaveWrites,
  { deletion, workload, keys = PROXY_KEYS }: StuckPod,
  nowMs: number,
): Promise<void> {
  const { name } = deletion.pod;
  let deleted: boolean;
  try {
    deleted = await writes.deletePod(deletion.owner.namespace, deletion.pod);
  } catch (err) {
    if (httpStatus(err) === 404) return;
    throw err;
  }
  if (!deleted) return;
  deps.metrics.forcedRollbackDeletions.inc();
  const to = workload.metadata?.annotations?.[keys.restartedRevision] ?? 'the last good revision';
  deps.logger.info('deleted a pod its rollback left not Ready (forced rollback)', {
    owner: ownerKey(deletion.owner),
    pod: name,
    from: deletion.from,
    to,
  });
  await deps.events.record({
    subject: workloadSubject(workload),
    type: 'Normal',
    reason: FORCED_ROLLBACK_EVENT,
    message: forcedRollbackMessage(deletion, to),
    once: null,
  });
  const had = readForcedRecord(workload.metadata?.annotations, keys);
  await writes.patchWorkload(
    workload,
    forcedRecordPatch(had, { from: deletion.from, pod: name }, nowMs, keys),
  );
}
