// Outrigger as its users run it: the chart installed unchanged with only the image
// named, the image built from the repository's Dockerfile, the webhook reached through its
// Service, the self-managed certificates kept by the controller in its pod, and the injected
// demo proxy really running beside the application, on a node that runs containers (the local
// cluster's real node, or any cluster given by KUBECONFIG with OUTRIGGER_E2E_IMAGE).
// The tests share one release and build on each other, in order.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { type V1Deployment, type V1Job } from '@kubernetes/client-node';
import {
  CONFIG_REVISION,
  REVISION,
  SYSTEM_NAMESPACE,
  TLS_SECRET_NAME,
  CA_SECRET_NAME,
} from '@outrigger/shared';
import { isNotFound } from '@outrigger/kube';
import {
  MERGE_PATCH,
  PROXY_CONTAINER,
  streamPodsDuring,
  apply,
  buildOutriggerImage,
  connect,
  deploymentYaml,
  done,
  helm,
  helmRelease,
  inClusterTarget,
  leaseHolder,
  kubeconfigPath,
  pending,
  repoRoot,
  podReady,
  podsRunningWithProxy,
  proxyStatus,
  optedIn,
  useInstall,
  waitFor,
  waitForRollout,
  type ImageReference,
  type InClusterTarget,
} from '../src';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
const PROXY = PROXY_CONTAINER;
const MINUTES = 60_000;

const target = inClusterTarget();
const describeInCluster = typeof target === 'string' ? describe.skip : describe;
if (typeof target === 'string') process.stderr.write(`[e2e] in-cluster suite skipped: ${target}\n`);

describeInCluster('Outrigger from its chart and image, on a node that runs containers', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';
  /** The values every later upgrade keeps (each step adds to them). */
  const values: string[] = [];
  const release = (more: string[] = [], to: ImageReference = image) => {
    values.push(...more);
    return helmRelease('upgrade', SYSTEM_NAMESPACE, to, values);
  };

  // Installed by the first test, with the chart's defaults.
  useInstall(cluster, { prefix: 'in-cluster', image, created: (name) => (app = name) });

  it(
    "installs with the chart's defaults, only the image named, and `outrigger check` passes every check",
    async () => {
      // proxyValues is empty on the local cluster, whose node knows the demo proxy by the
      // chart's default proxy image names
      values.push(...proxyValues);
      await helmRelease('install', SYSTEM_NAMESPACE, image, values);
      const { stdout } = await run(process.execPath, [CLI, 'check'], {
        env: { ...process.env, KUBECONFIG: kubeconfigPath() },
      });
      expect(stdout).not.toMatch(/\bFAIL/);
      // the image runs as the chart's defaults ask, in a namespace that enforces the restricted
      // Pod Security Standard: non-root, read-only root filesystem, no capabilities
      const { items } = await cluster.core.listNamespacedPod({ namespace: SYSTEM_NAMESPACE });
      expect(items.length).toBeGreaterThanOrEqual(2);
      for (const pod of items) {
        expect(pod.status?.phase).toBe('Running');
        for (const c of pod.spec?.containers ?? []) {
          expect(c.image).toBe(image.reference);
          expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
          expect(c.securityContext?.capabilities?.drop).toEqual(['ALL']);
          expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
          expect(c.securityContext?.runAsNonRoot ?? pod.spec?.securityContext?.runAsNonRoot).toBe(
            true,
          );
        }
      }
      // the controller in its pod mirrored the opt-in: the webhook will see this namespace
      await optedIn(cluster, app);
    },
    5 * MINUTES,
  );

  it(
    "runs the proxy beside an opted-in Deployment's app, and a Job with the native sidecar completes",
    async () => {
      await apply(cluster, deploymentYaml('web', { replicas: 2 }), { namespace: app });
      const pods = await podsRunningWithProxy(cluster, app, 'app=web', 2);
      for (const pod of pods) {
        expect(pod.metadata?.labels?.[REVISION]).toBeTruthy();
        // the proxy the webhook injected is the demo proxy, and it really started
        const status = proxyStatus(pod);
        expect(status?.ready).toBe(true);
        expect(status?.restartCount).toBe(0);
        // the demo proxy says which configuration it was started with
        const log = await cluster.core.readNamespacedPodLog({
          name: pod.metadata?.name ?? '',
          namespace: app,
          container: PROXY,
        });
        expect(log).toContain(pod.metadata?.labels?.[REVISION] ?? 'no revision label');
      }
      const job: V1Job = {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'once' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [
                {
                  name: 'job',
                  image: image.reference,
                  command: ['node', '-e', 'console.log("done")'],
                },
              ],
            },
          },
        },
      };
      await apply(cluster, job, { namespace: app });
      const jobPod = await waitFor(
        `Job ${app}/once to complete beside its proxy`,
        async () => {
          const job = (await cluster.objects.read({
            apiVersion: 'batch/v1',
            kind: 'Job',
            metadata: { name: 'once', namespace: app },
          })) as { status?: { succeeded?: number; failed?: number } };
          if ((job.status?.failed ?? 0) > 0)
            throw new Error(`Job once failed: ${JSON.stringify(job.status)}`);
          if ((job.status?.succeeded ?? 0) < 1) return pending(job.status);
          const list = await cluster.core.listNamespacedPod({
            namespace: app,
            labelSelector: 'job-name=once',
          });
          return done(list.items[0]);
        },
        { timeoutMs: 3 * MINUTES, intervalMs: 1000 },
      );
      // a native sidecar: an init container that restarts always, which did not hold the Job up
      const sidecar = jobPod?.spec?.initContainers?.find((c) => c.name === PROXY);
      expect(sidecar?.restartPolicy).toBe('Always');
    },
    8 * MINUTES,
  );

  it(
    "never injects the webhook's own pods; with failurePolicy Fail, losing every webhook pod does not deadlock",
    async () => {
      await release(['webhook.failurePolicy=Fail']);
      const webhookPods = async () =>
        (
          await cluster.core.listNamespacedPod({
            namespace: SYSTEM_NAMESPACE,
            labelSelector: 'app.kubernetes.io/component=webhook',
          })
        ).items;
      for (const pod of await webhookPods()) {
        expect(pod.spec?.containers.map((c) => c.name)).not.toContain(PROXY);
        expect(pod.metadata?.labels?.[REVISION]).toBeUndefined();
      }
      const stream = await streamPodsDuring(cluster, app, 300, async () => {
        // also a Deployment scaled while the webhook is gone: its ReplicaSet retries
        await apply(cluster, deploymentYaml('scaled', { replicas: 1 }), { namespace: app });
        await waitForRollout(
          cluster,
          { kind: 'Deployment', namespace: app, name: 'scaled' },
          { timeoutMs: 4 * MINUTES },
        );
        const before = await webhookPods();
        await cluster.core.deleteCollectionNamespacedPod({
          namespace: SYSTEM_NAMESPACE,
          labelSelector: 'app.kubernetes.io/component=webhook',
        });
        await cluster.apps.patchNamespacedDeploymentScale(
          { name: 'scaled', namespace: app, body: { spec: { replicas: 3 } } },
          MERGE_PATCH,
        );
        // the webhook comes back by itself: new pods, Ready, and admissions succeed again
        const gone = new Set(before.map((p) => p.metadata?.uid));
        await waitFor(
          'the webhook back by itself: new pods, every one Ready',
          async () => {
            const live = (await webhookPods()).filter((p) => !p.metadata?.deletionTimestamp);
            const fresh = live.filter((p) => !gone.has(p.metadata?.uid) && podReady(p));
            return live.length > 0 && fresh.length === live.length
              ? done(fresh)
              : pending(live.map((p) => [p.metadata?.name, podReady(p)]));
          },
          { timeoutMs: 3 * MINUTES, intervalMs: 500 },
        );
      });
      // every pod created meanwhile carries the proxy; every refusal says who refused and why
      for (const a of stream.admissions) {
        if (a.ok) expect(a.pod?.metadata?.labels?.[REVISION]).toBeTruthy();
        else expect(a.message).toMatch(/webhook "[^"]*outrigger[^"]*"/);
      }
      await waitForRollout(
        cluster,
        { kind: 'Deployment', namespace: app, name: 'scaled' },
        { timeoutMs: 4 * MINUTES },
      );
      await podsRunningWithProxy(cluster, app, 'app=scaled', 3);
    },
    10 * MINUTES,
  );

  it(
    "moves the wave to the other controller when the leader's pod is deleted, restarting no owner twice",
    async () => {
      // No canary stage: this is about the budget across a leader change (progressive.test.ts
      // kills the leader during a canary's soak).
      await release(['profile=ha', 'rollout.maxConcurrent=1', 'rollout.canary.count=0']);
      const owners = ['w1', 'w2', 'w3', 'w4'];
      for (const name of owners) {
        await apply(cluster, deploymentYaml(name, { replicas: 1 }), { namespace: app });
      }
      for (const name of owners)
        await waitForRollout(
          cluster,
          { kind: 'Deployment', namespace: app, name: name },
          { timeoutMs: 4 * MINUTES },
        );
      const revisionOf = (d: V1Deployment) =>
        d.spec?.template.metadata?.annotations?.[CONFIG_REVISION] ?? '';
      const old = revisionOf(
        await cluster.apps.readNamespacedDeployment({ name: 'w1', namespace: app }),
      );
      const leader = await leaseHolder(cluster);
      expect(leader).not.toBe('');

      // a new configuration: the wave starts; once it restarted its first owner, the leader goes
      const upgrade = release(['config.proxy.logLevel=debug']);
      await waitFor(
        'the wave to restart its first owner',
        async () => {
          const list = await cluster.apps.listNamespacedDeployment({ namespace: app });
          const moved = list.items.filter(
            (d) => owners.includes(d.metadata?.name ?? '') && revisionOf(d) !== old,
          );
          return moved.length > 0 ? done(moved) : pending(list.items.map(revisionOf));
        },
        { timeoutMs: 3 * MINUTES, intervalMs: 500 },
      );
      // the identity is the pod's hostname (its name) and a random suffix
      const leaderPod = leader.replace(/-[0-9a-f]{8}$/, '');
      await cluster.core.deleteNamespacedPod({ name: leaderPod, namespace: SYSTEM_NAMESPACE });
      await upgrade;

      const finished = await waitFor(
        'every owner on the new revision, rolled out',
        async () => {
          const list = await cluster.apps.listNamespacedDeployment({ namespace: app });
          const ours = list.items.filter((d) => owners.includes(d.metadata?.name ?? ''));
          const fresh = ours.filter(
            (d) =>
              revisionOf(d) !== old &&
              d.status?.updatedReplicas === 1 &&
              d.status.readyReplicas === 1,
          );
          return fresh.length === owners.length
            ? done(ours)
            : pending(
                ours.map((d) => [d.metadata?.name, revisionOf(d), d.status?.updatedReplicas]),
              );
        },
        { timeoutMs: 6 * MINUTES, intervalMs: 1000 },
      );
      expect(new Set(finished.map(revisionOf)).size).toBe(1);
      expect(await leaseHolder(cluster)).not.toBe(leader);
      // exactly one restart per owner: its first ReplicaSet and one more
      const sets = await cluster.apps.listNamespacedReplicaSet({ namespace: app });
      for (const name of owners) {
        const mine = sets.items.filter((rs) =>
          rs.metadata?.ownerReferences?.some((o) => o.name === name),
        );
        expect({ name, replicaSets: mine.length }).toEqual({ name, replicaSets: 2 });
      }
      for (const name of owners) await podsRunningWithProxy(cluster, app, `app=${name}`, 1);
    },
    12 * MINUTES,
  );

  it(
    'upgrades to a rebuilt image while pods are created steadily, with 0 failed admissions',
    async () => {
      const rebuilt = await buildOutriggerImage(`upgrade-${Date.now().toString(36)}`);
      expect(rebuilt.reference).not.toBe(image.reference);
      const stream = await streamPodsDuring(cluster, app, 250, async () => {
        await release([], rebuilt);
        for (const name of ['outrigger-webhook', 'outrigger-controller']) {
          const d = await waitForRollout(
            cluster,
            { kind: 'Deployment', namespace: SYSTEM_NAMESPACE, name: name },
            { timeoutMs: 4 * MINUTES },
          );
          expect(d.spec?.template.spec?.containers[0]?.image).toBe(rebuilt.reference);
        }
      });
      expect(stream.failures).toEqual([]);
      for (const a of stream.admissions) expect(a.pod?.metadata?.labels?.[REVISION]).toBeTruthy();
    },
    12 * MINUTES,
  );

  it(
    'renews the self-managed certificates, with short lifetimes, with 0 failed admissions',
    async () => {
      // A fresh install whose controller issues short-lived serving certificates from the
      // start (a lifetime applies to the certificates issued after it is set).
      await helm('uninstall', 'outrigger', '--namespace', SYSTEM_NAMESPACE, '--wait');
      for (const name of [TLS_SECRET_NAME, CA_SECRET_NAME]) {
        await cluster.core
          .deleteNamespacedSecret({ name, namespace: SYSTEM_NAMESPACE })
          .catch((error: unknown) => {
            if (!isNotFound(error)) throw error;
          });
      }
      values.push('certificates.selfManaged.certValiditySeconds=30');
      await helmRelease('install', SYSTEM_NAMESPACE, image, values);
      const servingCert = async () => {
        try {
          const s = await cluster.core.readNamespacedSecret({
            name: TLS_SECRET_NAME,
            namespace: SYSTEM_NAMESPACE,
          });
          return s.data?.['tls.crt'] ?? '';
        } catch (error) {
          if (isNotFound(error)) return '';
          throw error;
        }
      };
      const stream = await streamPodsDuring(cluster, app, 500, async () => {
        const seen = new Set<string>([await servingCert()]);
        // at least two renewals seen while pods keep coming
        await waitFor(
          'two renewals of the serving certificate',
          async () => {
            seen.add(await servingCert());
            return seen.size >= 3 ? done(seen.size) : pending(`${seen.size - 1} renewals`);
          },
          { timeoutMs: 4 * MINUTES, intervalMs: 1000 },
        );
      });
      expect(stream.failures).toEqual([]);
      for (const a of stream.admissions) expect(a.pod?.metadata?.labels?.[REVISION]).toBeTruthy();
    },
    8 * MINUTES,
  );
});
