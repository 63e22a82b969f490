// The forced rollback's one write of its own: deleting a pod a rollback left not Ready on the
// failed revision, so that its StatefulSet recreates it from the reverted template
// (shared/src/forced-rollback.ts decides which pod, and when). The pod's uid and resourceVersion
// are preconditions: a pod that changed since the plan saw it (became Ready, was replaced) is
// not deleted, and the wave decides again. A pod already gone is no failure. Then the owner
// records it (FORCED_ROLLBACK, which `outrigger status` reads) and an Event says what was done.

import { httpStatus, type KubeApi } from '@outrigger/kube';
import {
  RESTARTED_REVISION,
  forcedRecordPatch,
  ownerKey,
  readForcedRecord,
  type PodDeletion,
  type Workload,
} from '@outrigger/shared';
import { workloadSubject, type EventRecorder } from './events';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import { FORCED_ROLLBACK_EVENT, forcedRollbackMessage } from './wave-messages';

export interface ForcedRollbackDeps {
  api: KubeApi;
  /** Waits for a write token; throws when this replica may no longer write. */
  acquireWrite: () => Promise<void>;
  onWrite: (resource: string, verb: string) => void;
  events: EventRecorder;
  metrics: ControllerMetrics;
  logger: Logger;
  /** Runs one write; a conflict (a precondition that failed) gives undefined. */
  write: <T>(what: string, call: () => Promise<T>) => Promise<T | undefined>;
  /** Patches the owner the way the wave's other writes do. */
  patchWorkload: (workload: Workload, body: object) => Promise<Workload | undefined>;
}

/** Deletes the pod of `deletion`; a refusal other than 404 is thrown for the wave to hold. */
export async function deleteStuckPod(
  deps: ForcedRollbackDeps,
  deletion: PodDeletion,
  workload: Workload,
  nowMs: number,
): Promise<void> {
  const { namespace } = deletion.owner;
  const { name, uid, resourceVersion } = deletion.pod;
  await deps.acquireWrite();
  deps.onWrite('pods', 'delete');
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;
  const options = {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
  };
  let deleted: unknown;
  try {
    deleted = await deps.write(`Pod ${namespace}/${name}`, () =>
      deps.api.delete(path, undefined, options),
    );
  } catch (err) {
    if (httpStatus(err) === 404) return;
    throw err;
  }
  if (deleted === undefined) return;
  deps.metrics.forcedRollbackDeletions.inc();
  const to = workload.metadata?.annotations?.[RESTARTED_REVISION] ?? 'the last good revision';
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
  const had = readForcedRecord(workload.metadata?.annotations);
  await deps.patchWorkload(workload, forcedRecordPatch(had, deletion.from, name, nowMs));
}
