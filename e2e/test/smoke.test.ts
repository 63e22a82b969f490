// Smoke suite: the cluster under test behaves like a real one in every way Outrigger relies on.
// Workloads reach Ready on the (fake) nodes, Deployments really roll, the API server calls a
// webhook over TLS and stores its patch, RBAC is enforced for ServiceAccount tokens.

import * as path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { httpStatus as statusCode, isForbidden } from '@outrigger/kube';
import {
  apply,
  connect,
  createServiceAccount,
  done,
  freePort,
  grantRole,
  isLocalCluster,
  makeServingCert,
  pending,
  readPinnedVersions,
  remove,
  startAdmissionServer,
  startProcess,
  stopAllProcesses,
  waitFor,
  waitForRollout,
  webhookHost,
  withNamespace,
  writeServiceAccountKubeConfig,
  type AdmissionServer,
  type Cluster,
  type JsonPatchOperation,
  threeKindsYaml,
  PAUSE_IMAGE,
} from '../src';

/** Never pulled on the local cluster (kwok runs no containers); small and real elsewhere. */
const IMAGE = PAUSE_IMAGE;
const FIXTURES = path.join(__dirname, 'fixtures');

const cluster: Cluster = connect();
const onLocalCluster = isLocalCluster() ? it : it.skip;

afterAll(async () => {
  await stopAllProcesses();
  await cluster.close();
});

function isReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

/** Nodes a plain DaemonSet runs on: Ready, and not tainted against scheduling. */
async function schedulableNodes(): Promise<string[]> {
  const { items } = await cluster.core.listNode();
  return items
    .filter((node) =>
      node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    )
    .filter((node) => !node.spec?.unschedulable)
    .filter(
      (node) =>
        !node.spec?.taints?.some((t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute'),
    )
    .map((node) => node.metadata?.name ?? '');
}

async function readyPods(namespace: string, app: string): Promise<V1Pod[]> {
  const { items } = await cluster.core.listNamespacedPod({
    namespace,
    labelSelector: `app=${app}`,
  });
  return items.filter(isReady);
}

describe('the cluster under test', () => {
  onLocalCluster('serves the pinned Kubernetes release', async () => {
    const { kubernetes } = readPinnedVersions();
    const version = await cluster.version.getCode();
    expect(version.gitVersion).toBe(kubernetes);
  });

  it('runs a Deployment (3 replicas), a StatefulSet and a DaemonSet (every node) to Ready', async () => {
    await withNamespace(cluster, { prefix: 'smoke-workloads' }, async (namespace) => {
      await apply(cluster, threeKindsYaml(3), { namespace });
      await Promise.all([
        waitForRollout(cluster, { kind: 'Deployment', namespace, name: 'web' }),
        waitForRollout(cluster, { kind: 'StatefulSet', namespace, name: 'db' }),
        waitForRollout(cluster, { kind: 'DaemonSet', namespace, name: 'agent' }),
      ]);

      expect(await readyPods(namespace, 'web')).toHaveLength(3);
      expect((await readyPods(namespace, 'db')).map((p) => p.metadata?.name).sort()).toEqual([
        'db-0',
        'db-1',
      ]);
      const nodes = await schedulableNodes();
      if (isLocalCluster()) expect(nodes).toHaveLength(3);
      const agentNodes = (await readyPods(namespace, 'agent')).map((p) => p.spec?.nodeName);
      expect(agentNodes.sort()).toEqual(nodes.sort());
    });
  });

  it('rolls a Deployment to a new ReplicaSet when its template changes', async () => {
    await withNamespace(cluster, { prefix: 'smoke-rollout' }, async (namespace) => {
      const deployment = (revision: string): string => `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {e2e.outrigger.dev/revision: "${revision}"}
    spec: {containers: [{name: web, image: ${IMAGE}}]}
`;
      const ref = { kind: 'Deployment', namespace, name: 'web' } as const;
      const replicaSets = async (): Promise<Map<string, number>> => {
        const { items } = await cluster.apps.listNamespacedReplicaSet({
          namespace,
          labelSelector: 'app=web',
        });
        return new Map(items.map((rs) => [rs.metadata?.name ?? '', rs.spec?.replicas ?? 0]));
      };

      await apply(cluster, deployment('1'), { namespace });
      await waitForRollout(cluster, ref);
      const [first] = [...(await replicaSets()).keys()];

      await apply(cluster, deployment('2'), { namespace });
      const rolled = await waitForRollout(cluster, ref);
      const status = rolled.status;
      expect(status?.observedGeneration).toBeGreaterThanOrEqual(rolled.metadata?.generation ?? 0);
      expect(status?.updatedReplicas).toBe(3);
      expect(status?.availableReplicas).toBe(3);
      expect(status?.replicas).toBe(3);

      const after = await replicaSets();
      expect(after.size).toBe(2);
      expect(after.get(first ?? '')).toBe(0);
      const [second] =
        [...after].find(([name, replicas]) => name !== first && replicas === 3) ?? [];
      expect(second).toBeDefined();

      // The old pods go away (kwok finishes their termination), leaving 3 of the new ReplicaSet.
      await waitFor('only the new ReplicaSet pods to be left', async () => {
        const { items } = await cluster.core.listNamespacedPod({
          namespace,
          labelSelector: 'app=web',
        });
        const owners = items.map((p) => p.metadata?.ownerReferences?.[0]?.name);
        return owners.length === 3 && owners.every((o) => o === second)
          ? done(owners)
          : pending(owners);
      });
    });
  });

  describe('a mutating webhook on an HTTPS server started by the test', () => {
    let server: AdmissionServer | undefined;
    afterAll(async () => {
      await server?.close();
    });

    it('is called by the API server, and the stored pod carries its patch', async () => {
      const cert = await makeServingCert({ hosts: [webhookHost()] });
      const sidecar = { name: 'e2e-sidecar', image: IMAGE };
      const patch: JsonPatchOperation[] = [
        { op: 'add', path: '/spec/containers/-', value: sidecar },
        { op: 'add', path: '/metadata/labels/e2e.outrigger.dev~1mutated', value: 'true' },
      ];
      server = await startAdmissionServer({ cert, admit: () => ({ allowed: true, patch }) });

      await withNamespace(cluster, { prefix: 'smoke-webhook' }, async (namespace) => {
        const configuration = {
          apiVersion: 'admissionregistration.k8s.io/v1',
          kind: 'MutatingWebhookConfiguration',
          metadata: { name: `e2e-${namespace}` },
          webhooks: [
            {
              name: 'smoke.e2e.outrigger.dev',
              clientConfig: { url: server?.url('/mutate'), caBundle: cert.caBundle },
              rules: [
                {
                  operations: ['CREATE'],
                  apiGroups: [''],
                  apiVersions: ['v1'],
                  resources: ['pods'],
                  scope: 'Namespaced',
                },
              ],
              // Only this test's namespace: the rest of the cluster never sees this webhook.
              namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } },
              failurePolicy: 'Fail',
              sideEffects: 'None',
              admissionReviewVersions: ['v1'],
              timeoutSeconds: 5,
            },
          ],
        };
        const pod = (name: string): V1Pod => ({
          metadata: { name, labels: { app: 'web' } },
          spec: { containers: [{ name: 'web', image: IMAGE }] },
        });
        await apply(cluster, configuration);
        try {
          // The API server picks new webhook configurations up within a second or so; a dry run
          // (which calls webhooks without side effects) shows when it has.
          await waitFor('the API server to call the new webhook', async () => {
            const probe = await cluster.core.createNamespacedPod({
              namespace,
              body: pod('probe'),
              dryRun: 'All',
            });
            const names = probe.spec?.containers.map((c) => c.name);
            return names?.includes(sidecar.name) ? done(names) : pending({ containers: names });
          });

          await cluster.core.createNamespacedPod({ namespace, body: pod('web') });
          const stored = await cluster.core.readNamespacedPod({ namespace, name: 'web' });
          expect(stored.spec?.containers.map((c) => c.name)).toEqual(['web', 'e2e-sidecar']);
          expect(stored.metadata?.labels).toEqual({
            app: 'web',
            'e2e.outrigger.dev/mutated': 'true',
          });

          const review = server?.received.find(
            (r) => r.request.name === 'web' && !r.request.dryRun,
          );
          expect(review?.path).toBe('/mutate');
          expect(review?.request).toMatchObject({
            operation: 'CREATE',
            namespace,
            kind: { group: '', version: 'v1', kind: 'Pod' },
          });
        } finally {
          await remove(cluster, configuration);
        }
      });
    });
  });

  it('denies a ServiceAccount without a Role, and allows it what its Role grants', async () => {
    await withNamespace(cluster, { prefix: 'smoke-rbac' }, async (namespace) => {
      const account = { namespace, name: 'reader' };
      await createServiceAccount(cluster, account);
      const { path: kubeconfig, kubeConfig } = await writeServiceAccountKubeConfig(
        cluster,
        account,
      );
      const asReader = connect(kubeConfig);
      try {
        const denied = await asReader.core
          .listNamespacedPod({ namespace })
          .catch((e: unknown) => e);
        expect(statusCode(denied)).toBe(403);

        await grantRole(cluster, account, {
          rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] }],
        });
        await waitFor('the Role to let the ServiceAccount list pods', async () => {
          try {
            return done(await asReader.core.listNamespacedPod({ namespace }));
          } catch (error) {
            if (isForbidden(error)) return pending('still forbidden');
            throw error;
          }
        });
        const secrets = await asReader.core
          .listNamespacedSecret({ namespace })
          .catch((e: unknown) => e);
        expect(statusCode(secrets)).toBe(403);
      } finally {
        await asReader.close();
      }

      // The same, from a process started with the ServiceAccount's kubeconfig.
      const port = await freePort();
      const client = await startProcess({
        name: 'sa-client',
        command: process.execPath,
        args: [path.join(FIXTURES, 'sa-client.mts')],
        kubeconfig,
        env: { NAMESPACE: namespace, PORT: String(port) },
        ready: { url: `http://127.0.0.1:${port}/healthz` },
      });
      expect(client.output()).toContain('pods: allowed (0)');
      expect(client.output()).toContain('secrets: denied (HTTP 403)');
      expect(await client.stop()).toEqual({ code: 0, signal: null });
      expect(client.output()).toContain('SIGTERM: stopping');
    });
  });
});
