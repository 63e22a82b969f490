// What a MutatingAdmissionPolicy can do on this API server: the ground an injection mode that
// needs no Outrigger pod would stand on. The local cluster turns the MutatingAdmissionPolicy
// feature gate on and serves admissionregistration.k8s.io/v1beta1 (e2e/cluster/up.sh). Each
// fact is read from real admissions (server-side dry-run creates): a policy's matchConditions
// read the pod's annotations, where its template's stamp is; the binding's namespaceSelector
// chooses by the opt-in label the controller mirrors, while namespaceObject is not there for
// matchConditions; a JSON patch puts a native sidecar first among the init containers, where an
// apply configuration puts it after the pod's own.

import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { CONFIG_REVISION, INJECTION_LABEL, REVISION } from '@outrigger/shared';
import { apply, connect, createNamespace, deleteNamespace, done, pending, waitFor } from '../src';

const API = 'admissionregistration.k8s.io/v1beta1';
const PROXY = {
  name: 'outrigger-proxy',
  image: 'ghcr.io/outrigger/proxy:1.0.0',
  restartPolicy: 'Always',
};
const cel = (value: unknown): string => JSON.stringify(value);

/** A policy named `name` and its binding to the opted-in namespaces. */
function policy(name: string, spec: Record<string, unknown>): KubernetesObject[] {
  return [
    {
      apiVersion: API,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        reinvocationPolicy: 'IfNeeded',
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] },
          ],
        },
        ...spec,
      },
    } as KubernetesObject,
    {
      apiVersion: API,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name },
      spec: {
        policyName: name,
        matchResources: { namespaceSelector: { matchLabels: { [INJECTION_LABEL]: 'enabled' } } },
      },
    } as KubernetesObject,
  ];
}

const pinnedTo = (revision: string) =>
  `object.metadata.?annotations[${cel(CONFIG_REVISION)}].orValue('') == ${cel(revision)}`;

describe('what a MutatingAdmissionPolicy can do on this API server', () => {
  const cluster = connect();
  let served = false;
  let optedIn = '';
  let plain = '';
  const made: KubernetesObject[] = [];

  beforeAll(async () => {
    served = await cluster.objects
      .list(API, 'MutatingAdmissionPolicy')
      .then(() => true)
      .catch(() => false);
    if (!served) {
      process.stderr.write(
        `[e2e] admission-policy suite skipped: the API server does not serve ${API} MutatingAdmissionPolicy (feature gate MutatingAdmissionPolicy, --runtime-config=${API}=true)\n`,
      );
      return;
    }
    optedIn = await createNamespace(cluster, {
      prefix: 'map',
      labels: { [INJECTION_LABEL]: 'enabled' },
    });
    plain = await createNamespace(cluster, { prefix: 'map-plain' });
  });

  afterAll(async () => {
    for (const o of made.reverse()) await cluster.objects.delete(o).catch(() => undefined);
    for (const ns of [optedIn, plain]) if (ns) await deleteNamespace(cluster, ns);
    await cluster.close();
  });

  const pod = (namespace: string, annotations: Record<string, string>, init: string[] = []) =>
    cluster.core.createNamespacedPod({
      namespace,
      dryRun: 'All',
      body: {
        metadata: { generateName: 'map-', annotations, labels: { app: 'map' } },
        spec: {
          initContainers: init.map((name) => ({ name, image: 'registry.k8s.io/pause:3.10' })),
          containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }],
        },
      },
    });
  const initNames = (p: V1Pod) => (p.spec?.initContainers ?? []).map((c) => c.name);

  /** Applies the policy, then waits until a pod it must change comes back changed. */
  async function install(objects: KubernetesObject[], seen: () => Promise<boolean>) {
    made.push(...objects);
    await apply(cluster, objects);
    await waitFor(
      'the policy in force',
      async () => ((await seen()) ? done(undefined) : pending('not yet')),
      {
        timeoutMs: 30_000,
        intervalMs: 500,
      },
    );
  }

  it('matches on the pinned revision in the pod annotations, chooses namespaces by the mirrored opt-in label, and a JSON patch puts the sidecar first', async () => {
    if (!served) return;
    const r = `r${Date.now() % 100000}`;
    await install(
      policy(`outrigger-e2e-${r}`, {
        matchConditions: [
          { name: 'pinned', expression: pinnedTo(r) },
          {
            name: 'not-injected',
            expression: `!(${cel(REVISION)} in object.metadata.?labels.orValue({}))`,
          },
        ],
        mutations: [
          {
            patchType: 'JSONPatch',
            jsonPatch: {
              expression: `(has(object.spec.initContainers) ? [] : [JSONPatch{op: "add", path: "/spec/initContainers", value: []}]) + [JSONPatch{op: "add", path: "/spec/initContainers/0", value: Object.spec.initContainers{name: ${cel(PROXY.name)}, image: ${cel(PROXY.image)}, restartPolicy: "Always"}}, JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey(${cel(REVISION)}), value: ${cel(r)}}]`,
            },
          },
        ],
      }),
      async () => initNames(await pod(optedIn, { [CONFIG_REVISION]: r })).includes(PROXY.name),
    );
    const withInit = await pod(optedIn, { [CONFIG_REVISION]: r }, ['migrate']);
    expect(initNames(withInit)).toEqual([PROXY.name, 'migrate']);
    expect(withInit.spec?.initContainers?.[0]?.restartPolicy).toBe('Always');
    expect(withInit.metadata?.labels?.[REVISION]).toBe(r);
    // Another revision's pod, and a pod of a namespace without the label, are left alone.
    expect(initNames(await pod(optedIn, { [CONFIG_REVISION]: `${r}x` }))).toEqual([]);
    expect(initNames(await pod(plain, { [CONFIG_REVISION]: r }))).toEqual([]);
  });

  it('an apply configuration puts a new init container after the pod’s own', async () => {
    if (!served) return;
    const r = `a${Date.now() % 100000}`;
    await install(
      policy(`outrigger-e2e-${r}`, {
        matchConditions: [{ name: 'pinned', expression: pinnedTo(r) }],
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: {
              expression: `Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: ${cel(PROXY.name)}, image: ${cel(PROXY.image)}, restartPolicy: "Always"}]}}`,
            },
          },
        ],
      }),
      async () => initNames(await pod(optedIn, { [CONFIG_REVISION]: r })).includes(PROXY.name),
    );
    expect(initNames(await pod(optedIn, { [CONFIG_REVISION]: r }, ['migrate']))).toEqual([
      'migrate',
      PROXY.name,
    ]);
  });

  it('namespaceObject is not there for matchConditions: a condition on it fails the admission', async () => {
    if (!served) return;
    const r = `n${Date.now() % 100000}`;
    const objects = policy(`outrigger-e2e-${r}`, {
      matchConditions: [
        { name: 'pinned', expression: pinnedTo(r) },
        {
          name: 'namespace',
          expression: `namespaceObject.metadata.labels[?${cel(INJECTION_LABEL)}].orValue('') == 'enabled'`,
        },
      ],
      mutations: [
        {
          patchType: 'JSONPatch',
          jsonPatch: {
            expression: `[JSONPatch{op: "add", path: "/metadata/labels/seen", value: "yes"}]`,
          },
        },
      ],
    });
    made.push(...objects);
    await apply(cluster, objects);
    const refusal = await waitFor(
      'the policy in force',
      async () => {
        const message = await pod(optedIn, { [CONFIG_REVISION]: r }).then(
          () => '',
          (err: unknown) => (err instanceof Error ? err.message : JSON.stringify(err)),
        );
        return message.includes(`policy '${objects[0]?.metadata?.name}'`)
          ? done(message)
          : pending(message);
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(refusal).toContain('no such key: metadata');
  });
});
