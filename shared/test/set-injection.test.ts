// Injection of several sidecar sets: every matching set in the one patch, in applied order,
// each with its own revision label and status; a second pass changes nothing; opting out of one
// set leaves the others; a set the pod cannot take is left out with a warning.

import { applyPatch, type Operation } from 'fast-json-patch';
import {
  INJECT,
  REVISION,
  SKIPPED,
  appliedSets,
  cloneJson,
  injectManifest,
  injectPod,
  makeSnapshot,
  mustParseConfig,
  setInjectKey,
  setRevisionLabel,
  setSelectsTemplate,
  setStatusAnnotation,
  type ConfigSnapshot,
  type InjectInput,
  type NamespaceMeta,
  type PodLike,
} from '../src';

const SETS = [
  'sets:',
  '  - name: log-shipper',
  '    containers:',
  '      - {name: shipper, image: "ghcr.io/acme/shipper:1.0", ports: [{containerPort: 2020}]}',
  '    volumes: [{name: shipper-buffer, emptyDir: {}}]',
  '  - name: secrets',
  '    order: -5',
  '    initContainers: [{name: fetch-secrets, image: "ghcr.io/acme/secrets:3"}]',
  '    volumes: [{name: secrets, emptyDir: {medium: Memory}}]',
  '  - name: tracer',
  '    order: 200',
  '    position: after-app',
  '    nativeSidecar: "false"',
  '    podSelector: {matchLabels: {tracing: "on"}}',
  '    ownerKinds: [Deployment]',
  '    containers: [{name: tracer, image: "ghcr.io/acme/tracer:9"}]',
].join('\n');

const snapshot: ConfigSnapshot = makeSnapshot(mustParseConfig(SETS));
const revisionOf = (name: string): string =>
  appliedSets(snapshot.config).find((a) => a.set.name === name)?.revision ?? '';

const namespace: NamespaceMeta = { name: 'shop', labels: {}, annotations: { [INJECT]: 'enabled' } };

function pod(labels: Record<string, string> = {}, spec: Record<string, unknown> = {}): PodLike {
  return {
    metadata: {
      name: 'web-1',
      namespace: 'shop',
      labels: { app: 'web', ...labels },
      annotations: { 'outrigger.dev/owner-kind': 'Deployment', 'outrigger.dev/owner-name': 'web' },
    },
    spec: {
      initContainers: [{ name: 'migrate', image: 'ghcr.io/acme/migrate:1' }],
      containers: [{ name: 'app', image: 'ghcr.io/acme/web:1' }],
      ...spec,
    },
  };
}

function inject(p: PodLike, overrides: Partial<InjectInput> = {}) {
  return injectPod({
    pod: p,
    snapshot,
    namespaceName: 'shop',
    namespace,
    nativeSidecarSupported: true,
    ...overrides,
  });
}

/** The pod after the webhook's patch, and the result. */
function injected(p: PodLike, overrides: Partial<InjectInput> = {}) {
  const result = inject(p, overrides);
  if (!result.injected) throw new Error(`not injected: ${result.reason} ${result.detail}`);
  const after = applyPatch(
    cloneJson(p),
    cloneJson(result.patch) as Operation[],
    true,
    false,
  ).newDocument;
  return { result, after };
}

const names = (list: readonly { name: string }[] | undefined): string[] =>
  (list ?? []).map((c) => c.name);

describe('several sidecar sets on one pod', () => {
  it('applies every matching set in one patch, by order then name, around the app', () => {
    const { result, after } = injected(pod({ tracing: 'on' }));
    expect(result.sets).toEqual(['secrets', 'proxy', 'log-shipper', 'tracer']);
    // Native sidecars and init containers before the app's init containers, in applied order;
    // the classic after-app set behind the app's container.
    expect(names(after.spec?.initContainers)).toEqual([
      'fetch-secrets',
      'outrigger-init',
      'outrigger-proxy',
      'shipper',
      'migrate',
    ]);
    expect(names(after.spec?.containers)).toEqual(['app', 'tracer']);
    expect(names(after.spec?.volumes)).toEqual(['secrets', 'outrigger-identity', 'shipper-buffer']);
    const shipper = after.spec?.initContainers?.find((c) => c.name === 'shipper');
    expect(shipper?.restartPolicy).toBe('Always');
    expect(after.spec?.containers.find((c) => c.name === 'tracer')?.restartPolicy).toBeUndefined();
    const labels = after.metadata?.labels ?? {};
    expect(labels[REVISION]).toBe(snapshot.revision);
    for (const set of ['log-shipper', 'secrets', 'tracer'])
      expect(labels[setRevisionLabel(set)]).toBe(revisionOf(set));
    expect(
      JSON.parse(after.metadata?.annotations?.[setStatusAnnotation('log-shipper')] ?? ''),
    ).toEqual({
      revision: revisionOf('log-shipper'),
      initContainers: ['shipper'],
      containers: [],
      volumes: ['shipper-buffer'],
    });
  });

  it('a second pass over the injected pod changes nothing', () => {
    const { after } = injected(pod({ tracing: 'on' }));
    const again = inject(after);
    expect(again).toMatchObject({ injected: false, reason: 'already-injected', warnings: [] });
  });

  it('a set whose selectors do not match is left out silently', () => {
    const { result, after } = injected(pod());
    expect(result.sets).toEqual(['secrets', 'proxy', 'log-shipper']);
    expect(result.warnings).toEqual([]);
    expect(names(after.spec?.containers)).toEqual(['app']);
    const bare = {
      ...pod({ tracing: 'on' }),
      metadata: { name: 'solo', labels: { tracing: 'on' } },
    };
    expect(injected(bare).result.sets).not.toContain('tracer');
  });

  it('opting out of one set by pod label, pod annotation or namespace leaves the others', () => {
    const off = setInjectKey('log-shipper');
    const byLabel = injected(pod({ [off]: 'disabled' })).result;
    expect(byLabel.sets).toEqual(['secrets', 'proxy']);
    expect(byLabel.warnings).toEqual([]);
    const annotated = pod();
    annotated.metadata = {
      ...annotated.metadata,
      annotations: { ...annotated.metadata?.annotations, [off]: 'disabled' },
    };
    expect(injected(annotated).result.sets).toEqual(['secrets', 'proxy']);
    const ns = { ...namespace, annotations: { ...namespace.annotations, [off]: 'disabled' } };
    expect(injected(pod(), { namespace: ns }).result.sets).toEqual(['secrets', 'proxy']);
  });

  it("opting out of the proxy alone keeps the other sets, with the proxy's skip mark", () => {
    const { result, after } = injected(pod({ [setInjectKey('proxy')]: 'disabled' }));
    expect(result.sets).toEqual(['secrets', 'log-shipper']);
    expect(result.proxySkipped).toMatchObject({ reason: 'opted-out' });
    expect(after.metadata?.labels?.[SKIPPED]).toBe('opted-out');
    expect(after.metadata?.labels?.[REVISION]).toBeUndefined();
    expect(names(after.spec?.initContainers)).toEqual(['fetch-secrets', 'shipper', 'migrate']);
    expect(inject(after)).toMatchObject({ injected: false, reason: 'opted-out' });
  });

  it('the pod-wide opt-out and a namespace not opted in leave out every set', () => {
    expect(inject(pod({ [INJECT]: 'disabled' }))).toMatchObject({
      injected: false,
      reason: 'opted-out',
    });
    expect(inject(pod(), { namespace: { name: 'shop' } })).toMatchObject({
      injected: false,
      reason: 'namespace-not-enabled',
    });
  });

  it('a pod the proxy must skip still gets the sets that do not redirect its traffic', () => {
    const { result, after } = injected(pod({}, { hostNetwork: true }));
    expect(result.proxySkipped?.reason).toBe('host-network');
    expect(result.sets).toEqual(['secrets', 'log-shipper']);
    expect(after.metadata?.labels?.[SKIPPED]).toBe('host-network');
  });

  it('a set whose names the pod already uses is left out, with a warning naming it', () => {
    const { result, after } = injected(
      pod(
        {},
        {
          containers: [
            { name: 'app', image: 'a' },
            { name: 'shipper', image: 'b' },
          ],
        },
      ),
    );
    expect(result.sets).toEqual(['secrets', 'proxy']);
    expect(result.warnings).toEqual([
      'set log-shipper not added: the pod already has shipper; rename it or opt the pod out with log-shipper.sets.outrigger.dev/inject=disabled',
    ]);
    expect(names(after.spec?.containers)).toEqual(['app', 'shipper']);
  });

  it('a classic sidecar set is left out of a pod that runs to completion', () => {
    const job: PodLike = {
      metadata: {
        name: 'batch-x',
        labels: { tracing: 'on' },
        ownerReferences: [
          { apiVersion: 'batch/v1', kind: 'Job', name: 'batch', uid: 'u', controller: true },
        ],
      },
      spec: { restartPolicy: 'Never', containers: [{ name: 'work', image: 'w' }] },
    };
    const config = mustParseConfig(
      `${SETS}\n    # tracer\n`.replace('ownerKinds: [Deployment]', 'ownerKinds: [Job]'),
    );
    const { result } = injected(job, { snapshot: makeSnapshot(config) });
    expect(result.sets).toEqual(['secrets', 'proxy', 'log-shipper']);
    expect(result.warnings).toEqual([
      'set tracer not added: its classic sidecars would keep the Job from completing; enable native sidecars',
    ]);
  });

  it('the same pod twice gets the same patch, and a set-less configuration the patch of before', () => {
    const first = inject(pod({ tracing: 'on' }));
    const second = inject(pod({ tracing: 'on' }));
    expect(second).toEqual(first);
    const plain = makeSnapshot(mustParseConfig(''));
    const without = inject(pod(), { snapshot: plain });
    if (!without.injected) throw new Error('expected injection');
    expect(without.sets).toEqual(['proxy']);
    expect(JSON.stringify(without.patch)).not.toContain('sets.outrigger.dev');
  });
});

describe('sets where the pod and the configuration disagree', () => {
  it("a set for Jobs is injected into a CronJob's template by hand as into the pods of its Jobs", () => {
    const config = mustParseConfig(SETS.replace('ownerKinds: [Deployment]', 'ownerKinds: [Job]'));
    const cronJob = [
      'apiVersion: batch/v1',
      'kind: CronJob',
      'metadata: {name: nightly, namespace: shop}',
      'spec:',
      '  schedule: "0 3 * * *"',
      '  jobTemplate:',
      '    spec:',
      '      template:',
      '        metadata: {labels: {tracing: "on"}}',
      '        spec:',
      '          restartPolicy: Never',
      '          containers: [{name: work, image: "ghcr.io/acme/work:1"}]',
    ].join('\n');
    const { report } = injectManifest(cronJob, {
      snapshot: makeSnapshot(config),
      nativeSidecarSupported: true,
    });
    // The tracer is classic: a Job (and so a CronJob) is left without it, with the Job's reason.
    expect(report[0]).toMatchObject({
      outcome: 'injected',
      sets: ['secrets', 'proxy', 'log-shipper'],
    });
    expect(report[0]?.warnings).toEqual([
      'set tracer not added: its classic sidecars would keep the CronJob from completing; enable native sidecars',
    ]);
    const native = mustParseConfig(
      SETS.replace('ownerKinds: [Deployment]', 'ownerKinds: [Job]').replace(
        'nativeSidecar: "false"',
        'nativeSidecar: "true"',
      ),
    );
    const again = injectManifest(cronJob, {
      snapshot: makeSnapshot(native),
      nativeSidecarSupported: true,
    });
    expect(again.report[0]).toMatchObject({
      outcome: 'injected',
      sets: ['secrets', 'proxy', 'log-shipper', 'tracer'],
    });
  });

  it("a set that mounts one of the pod's volumes is left out, with a warning, of a pod without it", () => {
    const config = mustParseConfig(
      SETS.replace(
        '{name: shipper, image: "ghcr.io/acme/shipper:1.0", ports: [{containerPort: 2020}]}',
        '{name: shipper, image: "ghcr.io/acme/shipper:1.0", volumeMounts: [{name: app-logs, mountPath: /logs}, {name: shipper-buffer, mountPath: /buf}]}',
      ),
    );
    const withLogs = pod({}, { volumes: [{ name: 'app-logs', emptyDir: {} }] });
    const on = injected(withLogs, { snapshot: makeSnapshot(config) });
    expect(on.result.sets).toEqual(['secrets', 'proxy', 'log-shipper']);
    expect(on.result.warnings).toEqual([]);
    const off = injected(pod(), { snapshot: makeSnapshot(config) });
    expect(off.result.sets).toEqual(['secrets', 'proxy']);
    expect(off.result.warnings).toEqual([
      'set log-shipper not added: its containers mount app-logs, which the pod does not have; add the volume to the pod, or keep the set off it with log-shipper.sets.outrigger.dev/inject=disabled',
    ]);
    const shipper = appliedSets(config).find((a) => a.set.name === 'log-shipper');
    if (!shipper) throw new Error('no shipper');
    expect(setSelectsTemplate(shipper, pod(), namespace, 'Deployment')).toBe(
      'the template has no volume app-logs, which set log-shipper mounts: the webhook leaves it out',
    );
    expect(setSelectsTemplate(shipper, withLogs, namespace, 'Deployment')).toBeUndefined();
  });

  it('a set with a namespace selector is left out, with a warning, where the namespace is not known', () => {
    const config = mustParseConfig(
      [
        'sets:',
        '  - {name: dev-agent, namespaceSelector: {matchLabels: {env: dev}}, containers: [{name: agent, image: "ghcr.io/acme/a:1"}]}',
        '  - {name: prod-agent, namespaceSelector: {matchLabels: {env: prod}}, containers: [{name: agent, image: "ghcr.io/acme/a:2"}]}',
      ].join('\n'),
    );
    const snap = makeSnapshot(config);
    const { result } = injected(pod(), { snapshot: snap, namespace: 'assume-enabled' });
    expect(result.sets).toEqual(['proxy']);
    expect(result.warnings).toEqual([
      "set dev-agent not added: its namespaceSelector needs the labels of the pod's namespace, which are not known here",
      "set prod-agent not added: its namespaceSelector needs the labels of the pod's namespace, which are not known here",
    ]);
    const dev = { name: 'shop', labels: { env: 'dev' }, annotations: { [INJECT]: 'enabled' } };
    expect(injected(pod(), { snapshot: snap, namespace: dev }).result.sets).toEqual([
      'proxy',
      'dev-agent',
    ]);
  });

  it('a set is left out of a pod whose pinned proxy takes its port, though the current one does not', () => {
    const config = mustParseConfig(
      [
        'proxy: {ports: {admin: 4192}}',
        'sets:',
        '  - {name: stats, containers: [{name: stats, image: "ghcr.io/acme/s:1", ports: [{containerPort: 4191}]}]}',
      ].join('\n'),
    );
    const pinned = makeSnapshot({
      ...config,
      proxy: { ...config.proxy, ports: { ...config.proxy.ports, admin: 4191 } },
    });
    const { result } = injected(pod(), { snapshot: pinned });
    expect(result.sets).toEqual(['proxy']);
    expect(result.warnings).toEqual([
      'set stats not added: it would take the port 4191 of the proxy in this pod; give it names and ports of its own',
    ]);
    expect(injected(pod(), { snapshot: makeSnapshot(config) }).result.sets).toEqual([
      'proxy',
      'stats',
    ]);
  });

  it("with a classic proxy, the sets' init containers run before the traffic is redirected", () => {
    const { after } = injected(pod(), { nativeSidecarSupported: false });
    expect(names(after.spec?.initContainers)).toEqual([
      'fetch-secrets',
      'outrigger-init',
      'migrate',
    ]);
    // log-shipper (auto) is a classic sidecar here too, before the app: kubectl picks the app.
    expect(names(after.spec?.containers)).toEqual(['outrigger-proxy', 'shipper', 'app']);
    expect(after.metadata?.annotations?.['kubectl.kubernetes.io/default-container']).toBe('app');
  });

  it('a classic set before the app names the default container even beside a native proxy', () => {
    const config = mustParseConfig(
      'sets:\n  - {name: classic, nativeSidecar: "false", containers: [{name: c, image: "ghcr.io/acme/c:1"}]}\n',
    );
    const { after } = injected(pod(), { snapshot: makeSnapshot(config) });
    expect(names(after.spec?.containers)).toEqual(['c', 'app']);
    expect(after.metadata?.annotations?.['kubectl.kubernetes.io/default-container']).toBe('app');
  });
});
