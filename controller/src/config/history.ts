// The history reconcile: records the configuration in force in the revision history ConfigMap
// (`<config-map>-history`, shared/src/config/revision-history.ts), which the webhook reads to give a
// pod the revision its template is pinned to. Creates the ConfigMap the first time; afterwards
// a merge patch that adds the new revision and drops the oldest beyond `rollout.history`, never
// the last good one. Every write carries the resourceVersion it was decided on.

import type { V1ConfigMap } from '@kubernetes/client-node';
import { isConflict, type KubeApi, type ObjectRef } from '@outrigger/kube';
import {
  FIELD_MANAGER,
  historyDataPatch,
  readHistory,
  readWave,
  type Labels,
} from '@outrigger/shared';
import type { ConfigInForce } from './config-map';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import type { Result } from '../watch/queue';

export const HISTORY_KEY = 'History';

export interface HistoryDeps {
  api: KubeApi;
  ref: ObjectRef;
  config: ConfigInForce | undefined;
  /** The configuration ConfigMap's annotations: the last good revision is never dropped. */
  configAnnotations: Labels | undefined;
  history: V1ConfigMap | undefined;
  /** Revisions owners' templates are pinned to now: never dropped while in use. */
  inUse: ReadonlySet<string>;
  clock: () => number;
  acquireWrite: () => Promise<void>;
  metrics: ControllerMetrics;
  logger: Logger;
}

/** Problems already logged, so a resync of the same bad entry does not log it again. */
const reported = new Set<string>();

export async function reconcileHistory(deps: HistoryDeps): Promise<Result> {
  if (!deps.config) return { done: true };
  const history = readHistory(deps.history?.data);
  for (const problem of history.problems) {
    if (reported.has(problem)) continue;
    reported.add(problem);
    deps.logger.warn('revision history entry left out', {
      configMap: `${deps.ref.namespace}/${deps.ref.name}`,
      problem,
    });
  }
  const lastGood = readWave(deps.configAnnotations).lastGood;
  const patch = historyDataPatch({
    history: history.entries,
    config: deps.config.config,
    revision: deps.config.revision,
    nowMs: deps.clock(),
    limit: deps.config.config.rollout.history,
    keep: [...(lastGood ? [lastGood] : []), ...deps.inUse],
    invalid: history.invalid,
  });
  if (!patch) return { done: true };
  await deps.acquireWrite();
  try {
    await write(deps, patch);
  } catch (err) {
    deps.metrics.historyWrites.inc({ outcome: 'failed' });
    // Created or changed since our cache saw it: decide again once the watch has caught up.
    if (isConflict(err)) return { requeueAfterMs: 1000 };
    throw err;
  }
  deps.metrics.historyWrites.inc({ outcome: 'recorded' });
  deps.metrics.writes.inc({ resource: 'configmaps', verb: deps.history ? 'patch' : 'create' });
  deps.logger.info('revision recorded in the history', {
    revision: deps.config.revision,
    dropped: Object.keys(patch).filter((k) => patch[k] === null),
  });
  return { done: true };
}

async function write(deps: HistoryDeps, patch: Record<string, string | null>): Promise<void> {
  const { namespace, name } = deps.ref;
  if (!deps.history) {
    const data = Object.fromEntries(
      Object.entries(patch).filter((e): e is [string, string] => e[1] !== null),
    );
    await deps.api.create(
      `/api/v1/namespaces/${namespace}/configmaps`,
      {
        metadata: { name, namespace, labels: { 'app.kubernetes.io/part-of': 'outrigger' } },
        data,
      },
      { fieldManager: FIELD_MANAGER },
    );
    return;
  }
  const rv = deps.history.metadata?.resourceVersion;
  await deps.api.patch(
    `/api/v1/namespaces/${namespace}/configmaps/${name}`,
    { metadata: rv ? { resourceVersion: rv } : {}, data: patch },
    'merge',
    { fieldManager: FIELD_MANAGER },
  );
}
