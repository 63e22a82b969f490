// Whether a workload's rollout has finished, by the same conditions `kubectl rollout status`
// uses for each kind (kubectl pkg/polymorphichelpers/rollout_status.go), so "complete" means
// what an admin already knows it to mean. Pure: the caller passes the object as the API
// returned it; the clock enters only through deadlineExceeded's parameters.

import type { KubeObject, ObjectMeta, PodLike } from '../kubernetes/k8s';
import { isStampedKind, type StampedKind } from '../admission/stamp';

export interface WorkloadMeta extends ObjectMeta {
  generation?: number;
  resourceVersion?: string;
}

export interface Condition {
  type?: string;
  status?: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  lastUpdateTime?: string;
}

export interface UpdateStrategy {
  type?: string;
  rollingUpdate?: { partition?: number; [key: string]: unknown };
}

export interface DeploymentObject extends KubeObject {
  kind: 'Deployment';
  metadata?: WorkloadMeta;
  spec?: { replicas?: number; paused?: boolean; template?: PodLike; [key: string]: unknown };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    updatedReplicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    conditions?: Condition[];
  };
}

export interface StatefulSetObject extends KubeObject {
  kind: 'StatefulSet';
  metadata?: WorkloadMeta;
  spec?: {
    replicas?: number;
    podManagementPolicy?: string;
    updateStrategy?: UpdateStrategy;
    template?: PodLike;
    [key: string]: unknown;
  };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    updatedReplicas?: number;
    currentReplicas?: number;
    currentRevision?: string;
    updateRevision?: string;
  };
}

export interface DaemonSetObject extends KubeObject {
  kind: 'DaemonSet';
  metadata?: WorkloadMeta;
  spec?: { updateStrategy?: UpdateStrategy; template?: PodLike; [key: string]: unknown };
  status?: {
    observedGeneration?: number;
    desiredNumberScheduled?: number;
    currentNumberScheduled?: number;
    updatedNumberScheduled?: number;
    numberReady?: number;
    numberAvailable?: number;
  };
}

/** The owners Outrigger stamps and restarts, discriminated by kind. */
export type Workload = DeploymentObject | StatefulSetObject | DaemonSetObject;

/**
 * The object as a Workload, or undefined when it is not an apps/v1 kind we roll. Items of a
 * list carry no kind, so the caller, who knows what it listed, may name it; the object is
 * copied, never changed, because it may belong to an informer's cache.
 */
export function asWorkload(object: KubeObject, listedKind?: StampedKind): Workload | undefined {
  const kind = object.kind ?? listedKind;
  if (!isStampedKind(kind)) return undefined;
  if (object.apiVersion !== undefined && object.apiVersion !== 'apps/v1') return undefined;
  return { ...object, apiVersion: 'apps/v1', kind };
}

/** Why a rollout is not finished yet; a closed set, so metrics can label by it. */
export const PROGRESSING_REASONS = [
  'spec-not-observed',
  'updated-replicas',
  'old-replicas',
  'available-replicas',
  'ready-replicas',
  'partitioned-rollout',
  'revision-update',
  'updated-pods',
  'available-pods',
] as const;
export type ProgressingReason = (typeof PROGRESSING_REASONS)[number];

export type RolloutStatus =
  | { state: 'complete'; detail: string }
  | { state: 'progressing'; reason: ProgressingReason; detail: string }
  /** Only Deployments report this themselves; `since` is when their condition turned. */
  | { state: 'stalled'; reason: 'ProgressDeadlineExceeded'; detail: string; since?: string }
  /** A strategy kubectl cannot follow (OnDelete): the pods change only when deleted. */
  | { state: 'unsupported'; strategy: string; detail: string };

const progressing = (reason: ProgressingReason, detail: string): RolloutStatus => ({
  state: 'progressing',
  reason,
  detail,
});

/** Go's zero value for an absent status field, which is what kubectl compares against. */
const n = (value: number | undefined): number => value ?? 0;

// The API server defaults an absent strategy type to RollingUpdate; objects written by hand
// (tests, `outrigger` reading files) may lack it, so absent counts as the default here.
const strategyOf = (strategy: UpdateStrategy | undefined): string =>
  strategy?.type ?? 'RollingUpdate';

/** How many pods the workload wants: its replicas, or the nodes a DaemonSet should run on. */
export function desiredPods(workload: Workload): number {
  switch (workload.kind) {
    case 'Deployment':
    case 'StatefulSet':
      return workload.spec?.replicas ?? 1;
    case 'DaemonSet':
      return workload.status?.desiredNumberScheduled ?? 0;
  }
}

/** Whether the workload's pods change only when someone deletes them. */
export function isOnDelete(workload: Workload): boolean {
  switch (workload.kind) {
    case 'Deployment':
      return false;
    case 'StatefulSet':
    case 'DaemonSet':
      return strategyOf(workload.spec?.updateStrategy) !== 'RollingUpdate';
  }
}

export function rolloutStatus(workload: Workload): RolloutStatus {
  switch (workload.kind) {
    case 'Deployment':
      return deploymentStatus(workload);
    case 'StatefulSet':
      return statefulSetStatus(workload);
    case 'DaemonSet':
      return daemonSetStatus(workload);
  }
}

/** Whether the status describes the latest spec; one that predates it says nothing about it. */
function observed(generation: number | undefined, observedGeneration: number | undefined): boolean {
  return observedGeneration !== undefined && n(generation) <= observedGeneration;
}

function deploymentStatus(deployment: DeploymentObject): RolloutStatus {
  if (!observed(deployment.metadata?.generation, deployment.status?.observedGeneration))
    return progressing('spec-not-observed', 'waiting for deployment spec update to be observed');
  const name = deployment.metadata?.name ?? '';
  return (
    deploymentStall(name, deployment.status?.conditions) ??
    deploymentReplicas(name, deployment.spec?.replicas, deployment.status ?? {})
  );
}

/** The Deployment's own verdict that its rollout stalled, from its Progressing condition. */
function deploymentStall(
  name: string,
  conditions: Condition[] | undefined,
): RolloutStatus | undefined {
  const cond = conditions?.find((c) => c.type === 'Progressing');
  if (cond?.reason !== 'ProgressDeadlineExceeded') return undefined;
  return {
    state: 'stalled',
    reason: 'ProgressDeadlineExceeded',
    detail: `deployment "${name}" exceeded its progress deadline: ${cond.message ?? ''}`.trim(),
    ...(cond.lastTransitionTime ? { since: cond.lastTransitionTime } : {}),
  };
}

function deploymentReplicas(
  name: string,
  replicas: number | undefined,
  status: NonNullable<DeploymentObject['status']>,
): RolloutStatus {
  const wait = `waiting for deployment "${name}" rollout to finish:`;
  const updated = n(status.updatedReplicas);
  const total = n(status.replicas);
  const available = n(status.availableReplicas);
  // kubectl skips this check when spec.replicas is absent (a nil pointer in Go).
  if (replicas !== undefined && updated < replicas)
    return progressing(
      'updated-replicas',
      `${wait} ${updated} out of ${replicas} new replicas have been updated`,
    );
  if (total > updated)
    return progressing(
      'old-replicas',
      `${wait} ${total - updated} old replicas are pending termination`,
    );
  if (available < updated)
    return progressing(
      'available-replicas',
      `${wait} ${available} of ${updated} updated replicas are available`,
    );
  return { state: 'complete', detail: `deployment "${name}" successfully rolled out` };
}

function unsupported(kind: string, strategy: string): RolloutStatus {
  return {
    state: 'unsupported',
    strategy,
    detail: `${kind} uses the ${strategy} update strategy: its pods change only when deleted`,
  };
}

function statefulSetStatus(statefulSet: StatefulSetObject): RolloutStatus {
  const strategy = statefulSet.spec?.updateStrategy;
  if (strategyOf(strategy) !== 'RollingUpdate')
    return unsupported('statefulset', strategyOf(strategy));
  const status = statefulSet.status ?? {};
  // Unlike the other two, kubectl treats observedGeneration 0 as never observed.
  if (
    !status.observedGeneration ||
    !observed(statefulSet.metadata?.generation, status.observedGeneration)
  )
    return progressing('spec-not-observed', 'waiting for statefulset spec update to be observed');
  const replicas = statefulSet.spec?.replicas;
  const ready = n(status.readyReplicas);
  if (replicas !== undefined && ready < replicas)
    return progressing('ready-replicas', `waiting for ${replicas - ready} pods to be ready`);
  // As in kubectl: with a rollingUpdate block (the API always writes one, with partition 0),
  // the partition decides and the revisions are not compared.
  return strategy?.rollingUpdate !== undefined
    ? partitionedStatus(replicas, strategy.rollingUpdate.partition, n(status.updatedReplicas))
    : revisionStatus(status);
}

function revisionStatus(status: NonNullable<StatefulSetObject['status']>): RolloutStatus {
  if (status.updateRevision !== status.currentRevision)
    return progressing(
      'revision-update',
      `waiting for statefulset rolling update to complete ${n(status.updatedReplicas)} pods at revision ${status.updateRevision ?? ''}`,
    );
  return {
    state: 'complete',
    detail: `statefulset rolling update complete ${n(status.currentReplicas)} pods at revision ${status.currentRevision ?? ''}`,
  };
}

function partitionedStatus(
  replicas: number | undefined,
  partition: number | undefined,
  updated: number,
): RolloutStatus {
  if (replicas !== undefined && partition !== undefined && updated < replicas - partition)
    return progressing(
      'partitioned-rollout',
      `waiting for partitioned roll out to finish: ${updated} out of ${replicas - partition} new pods have been updated`,
    );
  return { state: 'complete', detail: `partitioned roll out complete: ${updated} new pods` };
}

function daemonSetStatus(daemonSet: DaemonSetObject): RolloutStatus {
  const strategy = strategyOf(daemonSet.spec?.updateStrategy);
  if (strategy !== 'RollingUpdate') return unsupported('daemonset', strategy);
  const name = daemonSet.metadata?.name ?? '';
  const status = daemonSet.status ?? {};
  if (!observed(daemonSet.metadata?.generation, status.observedGeneration))
    return progressing('spec-not-observed', 'waiting for daemon set spec update to be observed');
  const wait = `waiting for daemon set "${name}" rollout to finish:`;
  const desired = n(status.desiredNumberScheduled);
  const updated = n(status.updatedNumberScheduled);
  if (updated < desired)
    return progressing(
      'updated-pods',
      `${wait} ${updated} out of ${desired} new pods have been updated`,
    );
  const available = n(status.numberAvailable);
  if (available < desired)
    return progressing(
      'available-pods',
      `${wait} ${available} of ${desired} updated pods are available`,
    );
  return { state: 'complete', detail: `daemon set "${name}" successfully rolled out` };
}

/**
 * Whether a rollout started at `startedAtMs` has run past its deadline at `nowMs`. Outrigger
 * applies this to every kind it restarts: StatefulSets and DaemonSets have no progress
 * deadline of their own, and a Deployment's own deadline may be far longer than ours. Strictly
 * after, as the Deployment controller counts it.
 */
export function deadlineExceeded(
  startedAtMs: number,
  nowMs: number,
  progressDeadlineSeconds: number,
): boolean {
  return nowMs - startedAtMs > progressDeadlineSeconds * 1000;
}
