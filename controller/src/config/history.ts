// The history reconcile: records the configuration in force in the revision history ConfigMap
// (`<config-map>-history`, shared/src/config/revision-history.ts), which the webhook reads to give a
// pod the revision its template is pinned to. Creates the ConfigMap the first time; afterwards
// a merge patch that adds the new revision and drops the oldest beyond `rollout.history`, never
// the last good one. Every write carries the resourceVersion it was decided on.

import type { V1ConfigMap } from '@kubernetes/client-node';
import { isConflict, type KubeApi, type ObjectRef } from '@outrigger/kube';
import {
  FIELD_MANAGER,
  HISTORY_MAX_BYTES,
  historyDataPatch,
  isSetHistoryKey,
  readHistory,
  readSetHistory,
  readWave,
  setHistoryDataPatch,
  setHistoryKey,
  setWaveKeys,
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
  /** The sets' revisions owners' templates are pinned to now, as setHistoryKey keys. */
  setsInUse: ReadonlySet<string>;
  clock: () => number;
  acquireWrite: () => Promise<void>;
  metrics: ControllerMetrics;
  logger: Logger;
}

/** Problems already logged, so a resync of the same bad entry does not log it again. */
const reported = new Set<string>();

/** The sets' part of the patch: their current revisions, in use and last good ones kept. */
function setsPatch(deps: HistoryDeps, proxyPatch: Record<string, string | null> | undefined) {
  const config = deps.config?.config;
  const data = deps.history?.data ?? {};
  const history = readSetHistory(data);
  if (
    !config ||
    (config.sets.length === 0 && history.entries.length + history.invalid.length === 0)
  )
    return { patch: {}, problems: history.problems };
  const keep = new Set(deps.setsInUse);
  for (const set of config.sets) {
    const lastGood = readWave(deps.configAnnotations, setWaveKeys(set.name)).lastGood;
    if (lastGood) keep.add(setHistoryKey(set.name, lastGood));
  }
  // What the proxy's entries take once this write is made: the sets have what is left.
  const proxyBytes = Object.entries({ ...data, ...proxyPatch })
    .filter(([k, v]) => !isSetHistoryKey(k) && v !== null)
    .reduce((n, [k, v]) => n + k.length + (v ?? '').length, 0);
  const patch = setHistoryDataPatch({
    history: history.entries,
    sets: config.sets,
    nowMs: deps.clock(),
    limit: config.rollout.history,
    keep,
    invalid: history.invalid,
    budgetBytes: Math.max(0, HISTORY_MAX_BYTES - proxyBytes),
  });
  return { patch, problems: history.problems };
}

export async function reconcileHistory(deps: HistoryDeps): Promise<Result> {
  if (!deps.config) return { done: true };
  const history = readHistory(deps.history?.data);
  const proxyPatch = historyDataPatch({
    history: history.entries,
    config: deps.config.config,
    revision: deps.config.revision,
    nowMs: deps.clock(),
    limit: deps.config.config.rollout.history,
    keep: [...lastGoodOf(deps), ...deps.inUse],
    invalid: history.invalid,
  });
  const sets = setsPatch(deps, proxyPatch);
  const merged = { ...proxyPatch, ...sets.patch };
  const patch = Object.keys(merged).length > 0 ? merged : undefined;
  for (const problem of [...history.problems, ...sets.problems]) {
    if (reported.has(problem)) continue;
    reported.add(problem);
    deps.logger.warn('revision history entry left out', {
      configMap: `${deps.ref.namespace}/${deps.ref.name}`,
      problem,
    });
  }
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

function lastGoodOf(deps: HistoryDeps): string[] {
  const lastGood = readWave(deps.configAnnotations).lastGood;
  return lastGood ? [lastGood] : [];
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
