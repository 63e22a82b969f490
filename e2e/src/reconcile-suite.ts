// What the reconciler's suites share: the webhook and the controller run as local processes
// under their own ServiceAccounts with the RBAC of manifests/install.yaml (a TestInstall, the
// webhook configuration failing open), one controller per suite file, and the questions those
// suites ask the cluster. Each scenario deletes its namespaces afterwards, so the next
// scenario's wave does not include them; every assertion is about the suite's own namespaces.

import type { KubernetesObject, V1Deployment, V1Pod, V1ReplicaSet } from '@kubernetes/client-node';
import {
  COMPLETED_REVISION,
  CONFIG_MAP_NAME,
  ENABLED,
  INJECT,
  INJECTION_LABEL,
  RESTARTED_REVISION,
  REVISION,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import { MERGE_PATCH, connect, type Cluster } from './cluster';
import { dumpingOnFailure } from './dump';
import { TestInstall, type ControllerProcess } from './install';
import { deleteNamespace } from './namespace';
import { deploymentRolloutStatus } from './rollout';
import { useTestInstall } from './use-test-install';
import { done, pending, waitFor } from './wait';

const PROXY = 'outrigger-proxy';

/**
 * A configuration of the reconciler's suites; the env variable changes the revision, nothing
 * else. No canary stage and no rollback: these suites are about the budget, the records, and a
 * stop an admin resumes past (progressive.test.ts is about the stages and the rollback).
 */
export function reconcileConfigYaml(step: number, maxConcurrent = 3, mode = 'auto'): string {
  return [
    'proxy:',
    '  env:',
    '    - name: E2E_STEP',
    `      value: "${step}"`,
    'rollout:',
    `  maxConcurrent: ${maxConcurrent}`,
    `  mode: ${mode}`,
    '  canary: {count: 0}',
    '  onFailure: stop',
    '  progressDeadlineSeconds: 120',
    '  healBackoffSeconds: 5',
    '',
  ].join('\n');
}

/** The revision a configuration's snapshot has: what the webhook stamps and the wave rolls. */
export const revisionOf = (yaml: string): string => makeSnapshot(mustParseConfig(yaml)).revision;

/** An object's annotation, or undefined. */
export const annotationOf = (o: KubernetesObject, key: string): string | undefined =>
  o.metadata?.annotations?.[key];

const isInjected = (pod: V1Pod, revision: string): boolean =>
  pod.metadata?.labels?.[REVISION] === revision &&
  [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some(
    (c) => c.name === PROXY,
  );

export class ReconcileSuite {
  readonly cluster: Cluster = connect();
  readonly install = new TestInstall(this.cluster, { configYaml: reconcileConfigYaml(0) });
  /** The revision the suite's install starts with. */
  readonly firstRevision = revisionOf(reconcileConfigYaml(0));
  /** The leading controller; a suite that kills it sets its successor here. */
  controller!: ControllerProcess;

  /**
   * Runs a scenario; on failure dumps its namespaces. Either way they are deleted afterwards, so
   * the next scenario's wave does not include them.
   */
  async scenario(namespaces: string[], body: () => Promise<void>): Promise<void> {
    try {
      await dumpingOnFailure(this.cluster, [...namespaces, this.install.system], body);
    } finally {
      await Promise.all(namespaces.map((ns) => deleteNamespace(this.cluster, ns, { wait: true })));
    }
  }

  async livePods(namespace: string): Promise<V1Pod[]> {
    const { items } = await this.cluster.core.listNamespacedPod({ namespace });
    return items.filter((p) => !p.metadata?.deletionTimestamp);
  }

  /** Waits until every live pod in the namespaces runs the sidecar at `revision` (and there are `count`). */
  async waitForPodsAt(namespaces: string[], revision: string, count: number): Promise<V1Pod[]> {
    return waitFor(
      `${count} pods in ${namespaces.join(', ')} injected at revision ${revision}`,
      async () => {
        const pods = (await Promise.all(namespaces.map((ns) => this.livePods(ns)))).flat();
        const behind = pods.filter((p) => !isInjected(p, revision));
        return pods.length === count && behind.length === 0
          ? done(pods)
          : pending({
              pods: pods.length,
              behind: behind.map(
                (p) => `${p.metadata?.name}: ${p.metadata?.labels?.[REVISION] ?? 'none'}`,
              ),
            });
      },
      { timeoutMs: 120_000 },
    );
  }

  async replicaSetsOf(namespace: string, name: string): Promise<V1ReplicaSet[]> {
    const { items } = await this.cluster.apps.listNamespacedReplicaSet({
      namespace,
      labelSelector: `app=${name}`,
    });
    return items;
  }

  async deployments(namespace: string): Promise<V1Deployment[]> {
    return (await this.cluster.apps.listNamespacedDeployment({ namespace })).items;
  }

  /** Waits until every Deployment in the namespaces was restarted to `revision` and completed. */
  async waitForRestarted(
    namespaces: string[],
    revision: string,
    count: number,
  ): Promise<V1Deployment[]> {
    return waitFor(
      `${count} Deployments restarted to ${revision} and complete`,
      async () => {
        const all = (await Promise.all(namespaces.map((ns) => this.deployments(ns)))).flat();
        const behind = all.filter(
          (d) =>
            annotationOf(d, RESTARTED_REVISION) !== revision ||
            d.metadata?.labels?.[COMPLETED_REVISION] !== revision ||
            deploymentRolloutStatus(d).outcome !== 'done',
        );
        return all.length === count && behind.length === 0
          ? done(all)
          : pending(
              behind.map((d) => `${d.metadata?.name}: ${annotationOf(d, RESTARTED_REVISION)}`),
            );
      },
      { timeoutMs: 180_000 },
    );
  }

  async eventsFor(namespace: string, name: string, reason: string) {
    const { items } = await this.cluster.core.listNamespacedEvent({
      namespace,
      fieldSelector: `involvedObject.name=${name},reason=${reason}`,
    });
    return items;
  }

  async configMapAnnotations(): Promise<Record<string, string>> {
    const cm = await this.cluster.core.readNamespacedConfigMap({
      namespace: this.install.system,
      name: CONFIG_MAP_NAME,
    });
    return cm.metadata?.annotations ?? {};
  }

  /** Opts a namespace in as an admin does, and waits for the controller's label. */
  async optIn(namespace: string): Promise<void> {
    await this.cluster.core.patchNamespace(
      { name: namespace, body: { metadata: { annotations: { [INJECT]: ENABLED } } } },
      MERGE_PATCH,
    );
    await this.optInLabelled(namespace);
  }

  /** The namespace was created annotated: wait for the controller's label. */
  async optInLabelled(namespace: string): Promise<void> {
    await waitFor(`the controller to label ${namespace}`, async () => {
      const n = await this.cluster.core.readNamespace({ name: namespace });
      return n.metadata?.labels?.[INJECTION_LABEL] === ENABLED
        ? done(undefined)
        : pending(n.metadata?.labels);
    });
  }
}

/** Registers the suite's beforeAll and afterAll; call it at the top of the suite file. */
export function useReconcileSuite(): ReconcileSuite {
  const suite = new ReconcileSuite();
  useTestInstall(suite.install, {
    build: ['webhook', 'controller'],
    then: async () => {
      suite.controller = await suite.install.startController('outrigger-controller-a');
    },
  });
  return suite;
}
