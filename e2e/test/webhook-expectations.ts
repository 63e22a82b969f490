// What the webhook suite expects of the objects the API server stored: the stamp, the injected
// pod, a pod left alone, and a Deployment's, StatefulSet's and DaemonSet's revisions.

import type {
  V1Container,
  V1Deployment,
  V1Pod,
  V1PodTemplateSpec,
  V1ReplicaSet,
} from '@kubernetes/client-node';
import {
  CONFIG_REVISION,
  ENV,
  IDENTITY_VOLUME,
  OWNER_KIND,
  OWNER_NAME,
  PREFIX,
  REVISION,
  SKIPPED,
  STAMPED,
} from '@outrigger/shared';
import { done, pending, waitFor, waitForRollout, type Cluster, deploymentYaml } from '../src';

const PROXY = 'outrigger-proxy';
const INIT = 'outrigger-init';
/** The Deployment controller's count of its rollouts (ReplicaSets it made). */
const DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';

/** The helpers, bound to the suite's cluster and to the revision and image it expects. */
export function webhookExpectations(
  cluster: Cluster,
  expected: { revision: string; image: string },
) {
  // ---- what a stored object looks like --------------------------------------------------------

  const names = (containers: V1Container[] | undefined): string[] =>
    (containers ?? []).map((c) => c.name);

  function isReady(pod: V1Pod): boolean {
    return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  }

  /** The stamp in a pod template, exactly as shared/src/names.ts names it. */
  function expectStamped(
    template: V1PodTemplateSpec | undefined,
    owner: string,
    kind = 'Deployment',
  ): void {
    expect(template?.metadata?.annotations).toMatchObject({
      [OWNER_KIND]: kind,
      [OWNER_NAME]: owner,
      [CONFIG_REVISION]: expected.revision,
    });
    expect(template?.metadata?.labels?.[STAMPED]).toBe('true');
  }

  /** Injected as docs/webhook.md says: labels, the init container, the proxy as a native sidecar. */
  function expectInjected(pod: V1Pod, owner: { kind: string; name: string }): void {
    const where = `pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
    expect({ where, labels: pod.metadata?.labels }).toMatchObject({
      where,
      labels: { [REVISION]: expected.revision, [OWNER_KIND]: owner.kind, [OWNER_NAME]: owner.name },
    });
    expect(pod.metadata?.labels?.[SKIPPED]).toBeUndefined();
    // Kubernetes 1.34 runs native sidecars: the proxy is an init container that keeps running.
    expect({ where, init: names(pod.spec?.initContainers) }).toEqual({
      where,
      init: [INIT, PROXY],
    });
    expect(names(pod.spec?.containers)).not.toContain(PROXY);
    const proxy = pod.spec?.initContainers?.find((c) => c.name === PROXY);
    expect(proxy?.restartPolicy).toBe('Always');
    // The ConfigMap's setting, not the default.
    expect(proxy?.env).toContainEqual({ name: ENV.logLevel, value: 'debug' });
    expect(pod.spec?.volumes?.map((v) => v.name)).toContain(IDENTITY_VOLUME);
  }

  /** Nothing of Outrigger's on the pod: no label or annotation of ours, no container, no volume. */
  function expectUntouched(pod: V1Pod, containers: string[]): void {
    const ours = (map: Record<string, string> | undefined): string[] =>
      Object.keys(map ?? {}).filter((key) => key.startsWith(`${PREFIX}/`));
    expect(ours(pod.metadata?.labels)).toEqual([]);
    expect(ours(pod.metadata?.annotations)).toEqual([]);
    expect(names(pod.spec?.initContainers)).toEqual([]);
    expect(names(pod.spec?.containers)).toEqual(containers);
    expect(pod.spec?.volumes?.map((v) => v.name)).not.toContain(IDENTITY_VOLUME);
  }

  // ---- Deployments ------------------------------------------------------------------------------

  const deployment = (
    name: string,
    replicas: number,
    labels: Record<string, string> = {},
  ): string => deploymentYaml(name, { replicas, labels });

  async function replicaSetsOf(namespace: string, owner: V1Deployment): Promise<V1ReplicaSet[]> {
    const { items } = await cluster.apps.listNamespacedReplicaSet({ namespace });
    return items.filter((rs) =>
      rs.metadata?.ownerReferences?.some((ref) => ref.uid === owner.metadata?.uid),
    );
  }

  /** The Deployment's pods once there are `replicas` of them, all Ready (none terminating). */
  async function readyPods(namespace: string, app: string, replicas: number): Promise<V1Pod[]> {
    return waitFor(`${replicas} Ready pods of ${namespace}/${app}`, async () => {
      const { items } = await cluster.core.listNamespacedPod({
        namespace,
        labelSelector: `app=${app}`,
      });
      const state = items.map((p) => ({ name: p.metadata?.name, ready: isReady(p) }));
      return items.length === replicas && items.every(isReady) ? done(items) : pending(state);
    });
  }

  /**
   * Exactly one ReplicaSet, once the Deployment controller has acted on the Deployment's latest
   * generation: a template changed after the create would be a second generation and a second
   * ReplicaSet, so the one seen here is the only one there will be.
   */
  async function expectOneReplicaSet(
    namespace: string,
    owner: V1Deployment,
  ): Promise<V1ReplicaSet> {
    const name = owner.metadata?.name ?? '';
    const observed = await waitFor(
      'the Deployment controller to observe the latest generation',
      async () => {
        const d = await cluster.apps.readNamespacedDeployment({ namespace, name });
        const { generation } = d.metadata ?? {};
        return generation !== undefined && d.status?.observedGeneration === generation
          ? done(d)
          : pending(d.status);
      },
    );
    expect(observed.metadata?.generation).toBe(owner.metadata?.generation);
    const later = await replicaSetsOf(namespace, observed);
    expect(later.map((rs) => rs.metadata?.name)).toHaveLength(1);
    const [only] = later;
    if (!only) throw new Error('no ReplicaSet');
    return only;
  }

  /** A scaled Deployment: the same template and ReplicaSet as before, every pod injected. */
  async function expectScaled(
    original: V1Deployment,
    replicaSet: V1ReplicaSet | undefined,
    replicas: number,
  ): Promise<void> {
    const namespace = original.metadata?.namespace ?? '';
    const name = original.metadata?.name ?? '';
    const rolled = await waitForRollout(cluster, { kind: 'Deployment', namespace, name });
    expect(rolled.status?.replicas).toBe(replicas);
    expect(rolled.metadata?.annotations?.[DEPLOYMENT_REVISION]).toBe('1');
    expect(rolled.spec?.template).toEqual(original.spec?.template);
    const after = await expectOneReplicaSet(namespace, rolled);
    expect(after.metadata?.name).toBe(replicaSet?.metadata?.name);
    expect(after.spec?.replicas).toBe(replicas);
    for (const pod of await readyPods(namespace, name, replicas))
      expectInjected(pod, { kind: 'Deployment', name });
  }

  /** A StatefulSet and a DaemonSet named `name`, labelled app=<name>. */
  function statefulSetAndDaemonSet(name: string): string {
    const body = (kind: string, extra: string) => `
apiVersion: apps/v1
kind: ${kind}
metadata: {name: ${name}}
spec:${extra}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata: {labels: {app: ${name}}}
    spec: {containers: [{name: ${name}, image: ${expected.image}}]}
`;
    return [
      body('StatefulSet', `\n  serviceName: ${name}\n  replicas: 2`),
      body('DaemonSet', ''),
    ].join('---');
  }

  /** The ControllerRevisions of a StatefulSet or DaemonSet: one per template it has run. */
  async function controllerRevisionsOf(
    namespace: string,
    uid: string | undefined,
  ): Promise<string[]> {
    const { items } = await cluster.apps.listNamespacedControllerRevision({ namespace });
    return items
      .filter((cr) => cr.metadata?.ownerReferences?.some((ref) => ref.uid === uid))
      .map((cr) => cr.metadata?.name ?? '');
  }

  return {
    names,
    isReady,
    expectStamped,
    expectInjected,
    expectUntouched,
    deployment,
    replicaSetsOf,
    readyPods,
    expectOneReplicaSet,
    expectScaled,
    statefulSetAndDaemonSet,
    controllerRevisionsOf,
  };
}
