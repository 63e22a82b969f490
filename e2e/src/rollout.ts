// Rollout status as `kubectl rollout status` decides it (k8s.io/kubectl/pkg/polymorphichelpers/
// rollout_status.go), for Deployments, StatefulSets and DaemonSets, and a wait built on it.

import type {
  V1DaemonSet,
  V1DaemonSetStatus,
  V1Deployment,
  V1DeploymentStatus,
  V1ObjectMeta,
  V1StatefulSet,
  V1StatefulSetStatus,
} from '@kubernetes/client-node';
import type { Cluster } from './cluster';
import { done, failed, pending, waitFor, type WaitOptions } from './wait';

export type RolloutStatus =
  | { outcome: 'done'; message: string }
  | { outcome: 'pending'; message: string }
  | { outcome: 'failed'; message: string };

const complete = (message: string): RolloutStatus => ({ outcome: 'done', message });
const waiting = (message: string): RolloutStatus => ({ outcome: 'pending', message });

/** A count the API server may leave out (it omits zeros). */
const count = (value: number | undefined, absent = 0): number => value ?? absent;

/** The generation the controller must have seen before the status means anything. */
const generation = (metadata: V1ObjectMeta | undefined): number => count(metadata?.generation);

const notRollingUpdate: RolloutStatus = {
  outcome: 'failed',
  message: 'rollout status is only available for the RollingUpdate strategy',
};

/** Done when the new template is observed, all replicas are updated and available, none are old. */
export function deploymentRolloutStatus(deployment: V1Deployment): RolloutStatus {
  const name = deployment.metadata?.name;
  const status: V1DeploymentStatus = deployment.status ?? {};
  const wanted = count(deployment.spec?.replicas, 1);
  const updated = count(status.updatedReplicas);
  const total = count(status.replicas);
  const available = count(status.availableReplicas);
  if (generation(deployment.metadata) > count(status.observedGeneration)) {
    return waiting(`waiting for deployment ${name} spec update to be observed`);
  }
  const progressing = status.conditions?.find((c) => c.type === 'Progressing');
  if (progressing?.reason === 'ProgressDeadlineExceeded') {
    return { outcome: 'failed', message: `deployment ${name} exceeded its progress deadline` };
  }
  if (updated < wanted)
    return waiting(`${updated} out of ${wanted} new replicas have been updated`);
  if (total > updated) return waiting(`${total - updated} old replicas are pending termination`);
  if (available < updated)
    return waiting(`${available} of ${updated} updated replicas are available`);
  return complete(`deployment ${name} successfully rolled out`);
}

/** The part of a StatefulSet's rollout after all replicas are ready: updates, partition. */
function statefulSetUpdateStatus(
  statefulSet: V1StatefulSet,
  status: Partial<V1StatefulSetStatus>,
): RolloutStatus {
  const wanted = count(statefulSet.spec?.replicas, 1);
  const updated = count(status.updatedReplicas);
  const partition = count(statefulSet.spec?.updateStrategy?.rollingUpdate?.partition);
  if (partition > 0) {
    return updated < wanted - partition
      ? waiting(`${updated} of ${wanted - partition} pods updated (partition ${partition})`)
      : complete(`partitioned roll out complete: ${wanted - partition} new pods have been updated`);
  }
  if (status.updateRevision !== status.currentRevision) {
    return waiting(`${updated} pods at revision ${String(status.updateRevision)}`);
  }
  return complete(
    `statefulset ${statefulSet.metadata?.name} rolling update complete at revision ${String(status.currentRevision)}`,
  );
}

/** RollingUpdate only; done when every replica is ready at the update revision (or the partition). */
export function statefulSetRolloutStatus(statefulSet: V1StatefulSet): RolloutStatus {
  const status: Partial<V1StatefulSetStatus> = statefulSet.status ?? {};
  const strategy = statefulSet.spec?.updateStrategy?.type;
  const wanted = count(statefulSet.spec?.replicas, 1);
  const observed = count(status.observedGeneration);
  const ready = count(status.readyReplicas);
  if (strategy !== undefined && strategy !== 'RollingUpdate') return notRollingUpdate;
  if (observed === 0 || generation(statefulSet.metadata) > observed) {
    return waiting(
      `waiting for statefulset ${statefulSet.metadata?.name} spec update to be observed`,
    );
  }
  if (ready < wanted) return waiting(`${wanted - ready} pods of ${wanted} are not ready`);
  return statefulSetUpdateStatus(statefulSet, status);
}

/** Done when every node that should run a pod runs an updated, available one. */
export function daemonSetRolloutStatus(daemonSet: V1DaemonSet): RolloutStatus {
  const name = daemonSet.metadata?.name;
  const status: Partial<V1DaemonSetStatus> = daemonSet.status ?? {};
  const strategy = daemonSet.spec?.updateStrategy?.type;
  const desired = count(status.desiredNumberScheduled);
  const updated = count(status.updatedNumberScheduled);
  const available = count(status.numberAvailable);
  if (strategy !== undefined && strategy !== 'RollingUpdate') return notRollingUpdate;
  if (generation(daemonSet.metadata) > count(status.observedGeneration)) {
    return waiting(`waiting for daemon set ${name} spec update to be observed`);
  }
  if (updated < desired) return waiting(`${updated} out of ${desired} new pods have been updated`);
  if (available < desired) return waiting(`${available} of ${desired} updated pods are available`);
  return complete(`daemon set ${name} successfully rolled out`);
}

export type Workload =
  | { kind: 'Deployment'; object: V1Deployment }
  | { kind: 'StatefulSet'; object: V1StatefulSet }
  | { kind: 'DaemonSet'; object: V1DaemonSet };

export type WorkloadKind = Workload['kind'];

/** The object type of a workload kind: WorkloadObject<'Deployment'> is V1Deployment. */
export type WorkloadObject<K extends WorkloadKind> = Extract<Workload, { kind: K }>['object'];

export interface WorkloadRef<K extends WorkloadKind = WorkloadKind> {
  kind: K;
  namespace: string;
  name: string;
}

export async function readWorkload(cluster: Cluster, ref: WorkloadRef): Promise<Workload> {
  const { kind, namespace, name } = ref;
  const args = { namespace, name };
  switch (kind) {
    case 'Deployment':
      return { kind, object: await cluster.apps.readNamespacedDeployment(args) };
    case 'StatefulSet':
      return { kind, object: await cluster.apps.readNamespacedStatefulSet(args) };
    case 'DaemonSet':
      return { kind, object: await cluster.apps.readNamespacedDaemonSet(args) };
  }
}

export function rolloutStatus(workload: Workload): RolloutStatus {
  switch (workload.kind) {
    case 'Deployment':
      return deploymentRolloutStatus(workload.object);
    case 'StatefulSet':
      return statefulSetRolloutStatus(workload.object);
    case 'DaemonSet':
      return daemonSetRolloutStatus(workload.object);
  }
}

/** Waits like `kubectl rollout status` (default deadline 60 s); resolves with the workload. */
export async function waitForRollout<K extends WorkloadKind>(
  cluster: Cluster,
  ref: WorkloadRef<K>,
  options: WaitOptions = {},
): Promise<WorkloadObject<K>> {
  return waitFor(
    `the rollout of ${ref.kind} ${ref.namespace}/${ref.name}`,
    async () => {
      const workload = await readWorkload(cluster, ref);
      const status = rolloutStatus(workload);
      // readWorkload returned the kind asked for.
      if (status.outcome === 'done') return done(workload.object as WorkloadObject<K>);
      if (status.outcome === 'failed') return failed(status.message);
      return pending({ message: status.message, status: workload.object.status });
    },
    { timeoutMs: 60_000, ...options },
  );
}
