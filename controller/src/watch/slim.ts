// What the controller's caches keep of each object: the fields its rules read, nothing else. A
// Deployment as the API server returns it is 3 to 8 KB of JSON with its managedFields and
// last-applied annotation; the controller reads its identity, the annotations and labels that
// are ours, the rollout strategy and its status. Ten thousand whole workloads would be most of
// the controller's memory; these are a few hundred bytes each. controller/test/slim.test.ts
// checks that every rule gives the same answer on the slim object as on the whole one.

import type { KubernetesObject, V1Namespace, V1Pod } from '@kubernetes/client-node';
import { isRecord, type Labels, type StampedKind, type Workload } from '@outrigger/shared';

/** Our own annotations: `outrigger.dev/...` and the overrides' `config.outrigger.dev/...`. */
const OURS = /(^|\.)outrigger\.dev\//;

function ours(annotations: unknown): Labels | undefined {
  if (!isRecord(annotations)) return undefined;
  let kept: Labels | undefined;
  for (const [key, value] of Object.entries(annotations))
    if (OURS.test(key) && typeof value === 'string') (kept ??= {})[key] = value;
  return kept;
}

const labelsOf = (labels: unknown): Labels | undefined =>
  isRecord(labels) ? (labels as Labels) : undefined;

/**
 * A copy without the keys whose value is undefined, so that a slim object has no empty fields.
 * Copied rather than deleted from, and never spread and then added to: `delete` turns an object
 * into a slow dictionary, and V8's optimized code gives an object spread and then given new
 * properties a map of its own each time (8 µs a workload, and ten thousand maps, before).
 */
function defined<T extends object>(o: T): T {
  const kept: Record<string, unknown> = {};
  for (const key in o) if (o[key] !== undefined) kept[key] = o[key];
  return kept as T;
}

type Meta = NonNullable<KubernetesObject['metadata']>;

/** An object's identity and then `rest`, as slim metadata. */
function identity<R extends object>(meta: Meta | undefined, rest: R) {
  const m = (meta ?? {}) as Meta & { generation?: number };
  return defined({
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    deletionTimestamp: m.deletionTimestamp,
    ...rest,
  });
}

const SPEC_FIELDS = [
  'replicas',
  'paused',
  'podManagementPolicy',
  'strategy',
  'updateStrategy',
  'minReadySeconds',
  'progressDeadlineSeconds',
] as const;

/**
 * A workload as the wave reads it: identity and generation, our annotations, its labels (the
 * canary's owner selector), the rollout's spec fields and status, and of the template only its
 * labels and our annotations (the opt-in, the stamp, the restart records).
 */
export function slimWorkload(kind: StampedKind): (object: KubernetesObject) => Workload {
  return (object) => {
    const o = object as Record<string, unknown> & { metadata?: Meta };
    const spec = isRecord(o.spec) ? o.spec : {};
    const template = isRecord(spec.template) ? spec.template : undefined;
    const templateMeta = isRecord(template?.metadata) ? template.metadata : {};
    const keptSpec: Record<string, unknown> = {};
    for (const field of SPEC_FIELDS) if (spec[field] !== undefined) keptSpec[field] = spec[field];
    if (template)
      keptSpec.template = {
        metadata: defined({
          labels: labelsOf(templateMeta.labels),
          annotations: ours(templateMeta.annotations),
        }),
      };
    return defined({
      apiVersion: 'apps/v1',
      kind,
      metadata: identity(o.metadata, {
        labels: labelsOf(o.metadata?.labels),
        annotations: ours(o.metadata?.annotations),
      }),
      spec: keptSpec,
      status: isRecord(o.status) ? o.status : undefined,
    });
  };
}

function containerStatus(raw: unknown): Record<string, unknown> {
  const s = isRecord(raw) ? raw : {};
  const last = isRecord(s.lastState) ? s.lastState : {};
  return defined({
    name: s.name,
    restartCount: s.restartCount,
    state:
      isRecord(s.state) && isRecord(s.state.waiting) ? { waiting: s.state.waiting } : undefined,
    lastState: isRecord(last.terminated)
      ? {
          terminated: {
            reason: last.terminated.reason,
            exitCode: last.terminated.exitCode,
            finishedAt: last.terminated.finishedAt,
          },
        }
      : undefined,
  });
}

const statuses = (list: unknown) => (Array.isArray(list) ? list.map(containerStatus) : undefined);

/**
 * A pod as the controller counts it: identity, labels, our annotations and its owner references
 * (whose pod it is), and of its status the phase, whether it is Ready, and each container's name,
 * restarts and waiting reason (the health gate).
 */
export function slimPod(object: KubernetesObject): V1Pod {
  const o = object as Record<string, unknown> & { metadata?: Meta };
  const status = isRecord(o.status) ? o.status : {};
  const ready = Array.isArray(status.conditions)
    ? (status.conditions as unknown[]).filter((c) => isRecord(c) && c.type === 'Ready')
    : undefined;
  return defined({
    metadata: identity(o.metadata, {
      labels: labelsOf(o.metadata?.labels),
      annotations: ours(o.metadata?.annotations),
      ownerReferences: o.metadata?.ownerReferences?.map((r) =>
        defined({
          apiVersion: r.apiVersion,
          kind: r.kind,
          name: r.name,
          uid: r.uid,
          controller: r.controller,
        }),
      ),
    }),
    status: defined({
      phase: status.phase,
      conditions: ready,
      initContainerStatuses: statuses(status.initContainerStatuses),
      containerStatuses: statuses(status.containerStatuses),
    }),
  }) as V1Pod;
}

/** A namespace as the controller reads it: its name, labels and annotations (the opt-in). */
export function slimNamespace(object: KubernetesObject): V1Namespace {
  const meta = object.metadata ?? {};
  return {
    metadata: defined({
      name: meta.name,
      resourceVersion: meta.resourceVersion,
      uid: meta.uid,
      labels: meta.labels,
      annotations: ours(meta.annotations),
    }),
  };
}
