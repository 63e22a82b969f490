// The `both` admission mode, installed from the chart (admission.mode=both): the compiled
// policies inject the pods, and the webhook takes the ones that ask for an override, which the
// policies leave alone. A pod gets the proxy once, whichever of the two sees it first; with the
// webhook at zero, plain pods still get it from the policies, and a pod that asks for an
// override is admitted without it (the webhook's failurePolicy, Ignore) and marked for nothing:
// the controller heals it once the webhook is back. Pods are server-side dry-run creates.

import type { V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  IDENTITY_VOLUME,
  OVERRIDE_PREFIX,
  REVISION,
  SYSTEM_NAMESPACE,
  configRevision,
  mustParseConfig,
  policyName,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  connect,
  containerNames,
  done,
  inClusterTarget,
  pending,
  useInstall,
  waitFor,
  type InClusterTarget,
} from '../src';
import { controllerPolicies, policyApiAbsent, policyApiVersion } from '../src/policy';

const MINUTES = 60_000;
const PROXY = 'outrigger-proxy';
const target = inClusterTarget();
const describeInCluster = typeof target === 'string' ? describe.skip : describe;
if (typeof target === 'string')
  process.stderr.write(`[e2e] admission both-mode suite skipped: ${target}\n`);

describeInCluster('admission.mode=both: the policies inject, the webhook takes overrides', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';
  let version: Awaited<ReturnType<typeof policyApiVersion>>;
  useInstall(cluster, {
    prefix: 'both-mode',
    image,
    values: [...proxyValues, 'admission.mode=both'],
    created: (n) => (app = n),
  });

  beforeAll(async () => {
    version = await policyApiVersion(cluster);
    if (!version) policyApiAbsent('the admission both-mode suite');
  });

  /** A server-side dry-run create of a pod in the suite's namespace, with these annotations. */
  const dryRun = (annotations: Record<string, string> = {}): Promise<V1Pod> =>
    cluster.core.createNamespacedPod({
      namespace: app,
      dryRun: 'All',
      body: {
        metadata: { generateName: 'both-', labels: { app: 'both' }, annotations },
        spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
      },
    });

  const count = (pod: V1Pod, name: string): number =>
    containerNames(pod).filter((n) => n === name).length;
  const logLevel = (pod: V1Pod): string | undefined =>
    [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]
      .find((c) => c.name === PROXY)
      ?.env?.find((e) => e.name === 'OUTRIGGER_LOG_LEVEL')?.value;
  const override = { [`${OVERRIDE_PREFIX}proxy-log-level`]: 'debug' };

  it(
    'a pod gets the proxy once, an overridden one from the webhook, and plain pods still get it with the webhook at zero',
    async () => {
      if (!version) return;
      const cm = await cluster.core.readNamespacedConfigMap({
        name: CONFIG_MAP_NAME,
        namespace: SYSTEM_NAMESPACE,
      });
      const revision = configRevision(mustParseConfig(cm.data?.[CONFIG_MAP_KEY] ?? ''));
      await waitFor(`the controller's policy for revision ${revision}`, async () => {
        const kept = await controllerPolicies(cluster, version);
        const names = kept.map((p) => p.metadata?.name);
        return names.includes(policyName('proxy', revision)) ? done(names) : pending(names);
      });

      const plain = await dryRun();
      expect(count(plain, PROXY)).toBe(1);
      expect(plain.spec?.volumes?.filter((v) => v.name === IDENTITY_VOLUME)).toHaveLength(1);
      expect(plain.metadata?.labels?.[REVISION]).toBe(revision);
      const overridden = await dryRun(override);
      expect(count(overridden, PROXY)).toBe(1);
      expect(logLevel(overridden)).toBe('debug');
      expect(logLevel(plain)).toBe('info');

      await cluster.apps.patchNamespacedDeploymentScale(
        { name: 'outrigger-webhook', namespace: SYSTEM_NAMESPACE, body: { spec: { replicas: 0 } } },
        MERGE_PATCH,
      );
      // The positive signal that the webhook is gone: a pod that asks for an override, which
      // only the webhook injects, is admitted without the proxy.
      const unserved = await waitFor('an overridden pod admitted without the webhook', async () => {
        const pod = await dryRun(override);
        return count(pod, PROXY) === 0 ? done(pod) : pending(containerNames(pod));
      });
      expect(unserved.metadata?.labels?.[REVISION]).toBeUndefined();
      const fromPolicy = await dryRun();
      expect(count(fromPolicy, PROXY)).toBe(1);
      expect(fromPolicy.metadata?.labels?.[REVISION]).toBe(revision);
      expect(containerNames(fromPolicy)).toEqual(containerNames(plain));
    },
    6 * MINUTES,
  );
});
