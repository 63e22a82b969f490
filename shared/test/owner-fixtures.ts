// Fixtures of the owner and wave tests: workloads as the API server returns them, namespaces,
// a fixed clock, the planner with defaults, and the API server's merge patch.

import {
  assessOwner,
  defaultConfig,
  isRecord,
  ownerKey,
  planWave,
  RESTARTED_AT,
  RESTARTED_REVISION,
  type Config,
  type NamespaceMeta,
  type OwnerAssessment,
  type OwnerInput,
  type PodCounts,
  type WaveInput,
  type WavePlan,
  type WaveState,
} from '../src';
import type { Workload } from '../src/rollout/rollout-status';

export const R0 = '0000000000';
export const R1 = '1111111111';
export const NOW = Date.parse('2025-03-01T12:00:00Z');
export const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
export const ago = (seconds: number) => iso(NOW - seconds * 1000);

export const enabledNs = (name = 'shop'): NamespaceMeta => ({
  name,
  annotations: { 'outrigger.dev/inject': 'enabled' },
});
export const plainNs = (name = 'shop'): NamespaceMeta => ({ name });

export type Kind = Workload['kind'];
export type Status = 'complete' | 'progressing' | 'deadline' | 'on-delete';

export interface WorkloadOptions {
  kind?: Kind;
  name?: string;
  namespace?: string;
  /** The revision stamped into the template; null for no stamp. */
  stamp?: string | null;
  /** Annotations and labels of the template beyond the stamp. */
  templateAnnotations?: Record<string, string>;
  templateLabels?: Record<string, string>;
  /** Annotations on the workload's own metadata (our restart records). */
  annotations?: Record<string, string>;
  /** Labels on the workload's own metadata (the completion record). */
  labels?: Record<string, string>;
  status?: Status;
}

export function stampOf(
  kind: Kind,
  name: string,
  revision: string | null | undefined,
): { labels: Record<string, string>; annotations: Record<string, string> } {
  if (revision === null || revision === undefined) return { labels: {}, annotations: {} };
  return {
    labels: { 'outrigger.dev/stamped': 'true' },
    annotations: {
      'outrigger.dev/owner-kind': kind,
      'outrigger.dev/owner-name': name,
      'outrigger.dev/config-revision': revision,
    },
  };
}

export function workload(o: WorkloadOptions = {}): Workload {
  const kind = o.kind ?? 'Deployment';
  const name = o.name ?? 'web';
  const stamp = stampOf(kind, name, o.stamp === undefined ? R1 : o.stamp);
  const template = {
    metadata: {
      labels: { app: name, ...stamp.labels, ...o.templateLabels },
      annotations: { ...stamp.annotations, ...o.templateAnnotations },
    },
    spec: { containers: [{ name: 'app', image: `${name}:1` }] },
  };
  const status = o.status ?? 'complete';
  // A rollout in progress: the controller has not observed the latest generation yet.
  // A stalled Deployment has observed its spec and reports the stall in a condition.
  const generation = status === 'progressing' ? 3 : 2;
  const metadata = {
    name,
    namespace: o.namespace ?? 'shop',
    generation,
    resourceVersion: '41',
    annotations: { ...o.annotations },
    ...(o.labels ? { labels: { ...o.labels } } : {}),
  };
  switch (kind) {
    case 'Deployment':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: { replicas: 2, template },
        status: {
          observedGeneration: 2,
          replicas: 2,
          updatedReplicas: status === 'deadline' ? 1 : 2,
          availableReplicas: 2,
          conditions:
            status === 'deadline'
              ? [
                  {
                    type: 'Progressing',
                    status: 'False',
                    reason: 'ProgressDeadlineExceeded',
                    lastTransitionTime: ago(30),
                  },
                ]
              : [],
        },
      };
    case 'StatefulSet':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: {
          replicas: 2,
          updateStrategy:
            status === 'on-delete'
              ? { type: 'OnDelete' }
              : { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
          template,
        },
        status: { observedGeneration: 2, replicas: 2, readyReplicas: 2, updatedReplicas: 2 },
      };
    case 'DaemonSet':
      return {
        apiVersion: 'apps/v1',
        kind,
        metadata,
        spec: {
          updateStrategy: { type: status === 'on-delete' ? 'OnDelete' : 'RollingUpdate' },
          template,
        },
        status: {
          observedGeneration: 2,
          desiredNumberScheduled: 3,
          updatedNumberScheduled: 3,
          numberAvailable: 3,
        },
      };
  }
}

export const order0Revision = (workload: Workload): string =>
  workload.metadata?.annotations?.[RESTARTED_REVISION] ?? '';

export const restarted = (
  revision: string,
  secondsAgo: number,
  extra: Record<string, string> = {},
) => ({
  [RESTARTED_REVISION]: revision,
  [RESTARTED_AT]: ago(secondsAgo),
  ...extra,
});

// These tests are about the budget, the order and the records: without a canary stage, which
// shared/test/wave-stage.test.ts covers.
export function configWith(rollout: Partial<Config['rollout']> = {}): Config {
  const base = defaultConfig();
  const canary = { ...base.rollout.canary, count: 0 };
  return { ...base, rollout: { ...base.rollout, canary, ...rollout } };
}

export const noPods: PodCounts = { escaped: 0, outdated: 0, injected: 2 };

export function input(w: Workload, extra: Partial<OwnerInput> = {}): OwnerInput {
  return {
    workload: w,
    namespace: enabledNs(w.metadata?.namespace),
    config: configWith(),
    revision: R1,
    pods: noPods,
    nowMs: NOW,
    ...extra,
  };
}

export const notStopped: WaveState = {
  stopped: undefined,
  resumeRequested: false,
  resumedAtMs: undefined,
};

export function plan(owners: OwnerAssessment[], extra: Partial<WaveInput> = {}): WavePlan {
  return planWave({
    owners,
    revision: R1,
    rollout: configWith({ maxConcurrent: 3 }).rollout,
    wave: notStopped,
    nowMs: NOW,
    ...extra,
  });
}

export const assess = (workload: Workload, extra: Partial<OwnerInput> = {}) =>
  assessOwner(input(workload, extra));
export const outdated = (namespace: string, name: string, kind: Kind = 'Deployment') =>
  assess(workload({ namespace, name, kind, stamp: R0 }));
export const rollingOurs = (namespace: string, name: string) =>
  assess(workload({ namespace, name, annotations: restarted(R1, 60), status: 'progressing' }));
/** The value, or a test failure naming what was missing. */
export function present<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`expected ${what}`);
  return value;
}

export const keys = (planned: WavePlan) => planned.restart.map((r) => ownerKey(r.owner));
export const entry = (planned: WavePlan, key: string) =>
  planned.report.find((e) => ownerKey(e.owner) === key);

/** What the API server does with a JSON merge patch (RFC 7386), and the generation bump. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const out: Record<string, unknown> = isRecord(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

export function write(workload: Workload, patch: Record<string, unknown>): Workload {
  const next = applyMergePatch(workload, patch) as Workload;
  const changed = JSON.stringify(next.spec) !== JSON.stringify(workload.spec);
  const generation = (workload.metadata?.generation ?? 0) + (changed ? 1 : 0);
  return { ...next, metadata: { ...next.metadata, generation } };
}
