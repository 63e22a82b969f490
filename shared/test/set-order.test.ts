// Sets added to a pod that carries others already (a template injected by hand with
// `outrigger inject`, then a set added to the configuration): each goes where it would have
// gone had the pod been injected with every set at once, by order then name, not at the front.

import { applyPatch, type Operation } from 'fast-json-patch';
import {
  INJECT,
  cloneJson,
  injectManifest,
  injectPod,
  makeSnapshot,
  mustParseConfig,
  type PodLike,
} from '../src';

const SHIPPER = [
  '  - name: log-shipper',
  '    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1.0"}]',
  '    volumes: [{name: shipper-buffer, emptyDir: {}}]',
];
const MORE = [
  '  - name: secrets',
  '    order: -5',
  '    initContainers: [{name: fetch-secrets, image: "ghcr.io/acme/secrets:3"}]',
  '    volumes: [{name: secrets, emptyDir: {medium: Memory}}]',
  '  - name: agent',
  '    order: 50',
  '    containers: [{name: agent, image: "ghcr.io/acme/agent:1"}]',
  '    initContainers: [{name: agent-setup, image: "ghcr.io/acme/agent-setup:1"}]',
  '    volumes: [{name: agent-state, emptyDir: {}}]',
  '  - name: tracer',
  '    order: 200',
  '    position: after-app',
  '    nativeSidecar: "false"',
  '    containers: [{name: tracer, image: "ghcr.io/acme/tracer:9"}]',
  '  - name: tail',
  '    order: 150',
  '    position: after-app',
  '    initContainers: [{name: tail-init, image: "ghcr.io/acme/tail:1"}]',
  '    containers: [{name: tail, image: "ghcr.io/acme/tail:1"}]',
  '    volumes: [{name: tail-spool, emptyDir: {}}]',
];

const app: PodLike = {
  metadata: {
    name: 'web-1',
    namespace: 'shop',
    labels: { app: 'web' },
    annotations: { 'outrigger.dev/owner-kind': 'Deployment', 'outrigger.dev/owner-name': 'web' },
  },
  spec: {
    initContainers: [{ name: 'migrate', image: 'ghcr.io/acme/migrate:1' }],
    containers: [{ name: 'app', image: 'ghcr.io/acme/web:1' }],
    volumes: [{ name: 'data', emptyDir: {} }],
  },
};

/** The pod after a pass of the webhook under `configText`, and the sets that pass added. */
function pass(pod: PodLike, configText: string): { pod: PodLike; sets: string[] } {
  const result = injectPod({
    pod,
    snapshot: makeSnapshot(mustParseConfig(configText)),
    namespaceName: 'shop',
    namespace: { name: 'shop', labels: {}, annotations: { [INJECT]: 'enabled' } },
    nativeSidecarSupported: true,
  });
  if (!result.injected) throw new Error(`not injected: ${result.reason} ${result.detail}`);
  const after = applyPatch(cloneJson(pod), cloneJson(result.patch) as Operation[], true, false);
  return { pod: after.newDocument, sets: result.sets };
}

const lists = (pod: PodLike) => ({
  initContainers: (pod.spec?.initContainers ?? []).map((c) => c.name),
  containers: (pod.spec?.containers ?? []).map((c) => c.name),
  volumes: (pod.spec?.volumes ?? []).map((v) => v.name),
});

describe('sets added to a pod that carries others', () => {
  it.each([
    ['a native proxy', ''],
    ['a classic proxy', 'nativeSidecar: "false"\n'],
  ])('with %s, every list comes out as one pass with every set would make it', (_, head) => {
    const first = `${head}sets:\n${SHIPPER.join('\n')}\n`;
    const all = `${head}sets:\n${[...SHIPPER, ...MORE].join('\n')}\n`;
    const once = pass(app, all);
    const carried = pass(app, first);
    const added = pass(carried.pod, all);
    expect(added.sets).toEqual(['secrets', 'agent', 'tail', 'tracer']);
    expect(lists(added.pod)).toEqual(lists(once.pod));
    // And a third pass changes nothing.
    expect(
      injectPod({
        pod: added.pod,
        snapshot: makeSnapshot(mustParseConfig(all)),
        namespaceName: 'shop',
        namespace: { name: 'shop', labels: {}, annotations: { [INJECT]: 'enabled' } },
        nativeSidecarSupported: true,
      }),
    ).toMatchObject({ injected: false, reason: 'already-injected' });
  });

  it('the proxy, added to a pod that carries sets on both sides of it, goes between them', () => {
    const all = `sets:\n${[...SHIPPER, ...MORE].join('\n')}\n`;
    const optedOut: PodLike = {
      ...app,
      metadata: {
        ...app.metadata,
        annotations: {
          ...app.metadata?.annotations,
          'proxy.sets.outrigger.dev/inject': 'disabled',
        },
      },
    };
    const carried = pass(optedOut, all);
    expect(carried.sets).toEqual(['secrets', 'agent', 'log-shipper', 'tail', 'tracer']);
    const annotations = { ...carried.pod.metadata?.annotations };
    delete annotations['proxy.sets.outrigger.dev/inject'];
    const labels = { ...carried.pod.metadata?.labels };
    delete labels['outrigger.dev/skipped'];
    const added = pass(
      { ...carried.pod, metadata: { ...carried.pod.metadata, annotations, labels } },
      all,
    );
    expect(added.sets).toEqual(['proxy']);
    expect(lists(added.pod)).toEqual(lists(pass(app, all).pod));
  });

  it('a volume two sets share is shared again on a later pass, and stays where one pass puts it', () => {
    const set = (name: string, order: number, volumes: string[]) =>
      `  - {name: ${name}, order: ${order}, containers: [{name: c-${name}, image: "ghcr.io/a/${name}:1"}], volumes: [${volumes.map((v) => `{name: ${v}, emptyDir: {}}`).join(', ')}]}`;
    const a = set('a', 10, ['shared']);
    const b = set('b', 50, ['shared']);
    const once = pass(app, `sets:\n${a}\n${b}\n`);
    const later = pass(pass(app, `sets:\n${a}\n`).pod, `sets:\n${a}\n${b}\n`);
    expect(later.sets).toEqual(['b']);
    expect(lists(later.pod)).toEqual(lists(once.pod));
    const e = set('e', 10, ['common']);
    const l = set('l', 200, ['lv', 'common']);
    const m = set('m', 100, ['mv']);
    const all = pass(app, `sets:\n${e}\n${l}\n${m}\n`);
    const added = pass(pass(app, `sets:\n${e}\n${l}\n`).pod, `sets:\n${e}\n${l}\n${m}\n`);
    expect(added.sets).toEqual(['m']);
    expect(lists(added.pod)).toEqual(lists(all.pod));
  });

  it('a shared volume sits in the first declaring set’s place, whichever set adds it', () => {
    // The compiled policies run in no fixed order (the API server's is a map's): where a volume
    // goes may not depend on which of its sets runs first, nor on whether the first applies.
    const shipper =
      '  - {name: shipper, order: 10, containers: [{name: ship, image: "ghcr.io/a/s:1"}], volumes: [{name: spool, emptyDir: {}}]}';
    const metrics =
      '  - {name: metrics, order: 150, position: after-app, containers: [{name: exporter, image: "ghcr.io/a/m:1"}], volumes: [{name: exporter-state, emptyDir: {}}, {name: spool, emptyDir: {}}]}';
    const config = `sets:\n${shipper}\n${metrics}\n`;
    const expected = ['data', 'outrigger-identity', 'spool', 'exporter-state'];
    expect(lists(pass(app, config).pod).volumes).toEqual(expected);
    const withoutShipper = (pod: PodLike, off: boolean): PodLike => {
      const annotations = { ...pod.metadata?.annotations };
      if (off) annotations['shipper.sets.outrigger.dev/inject'] = 'disabled';
      else delete annotations['shipper.sets.outrigger.dev/inject'];
      return { ...pod, metadata: { ...pod.metadata, annotations } };
    };
    const metricsOnly = pass(withoutShipper(app, true), config);
    expect(metricsOnly.sets).toEqual(['proxy', 'metrics']);
    expect(lists(metricsOnly.pod).volumes).toEqual(expected);
    const shipperLater = pass(withoutShipper(metricsOnly.pod, false), config);
    expect(shipperLater.sets).toEqual(['shipper']);
    expect(lists(shipperLater.pod)).toEqual(lists(pass(app, config).pod));
  });

  it('a pod’s own volume that a set it does not get declares stays the pod’s, before every set’s', () => {
    const config = [
      'sets:',
      '  - {name: shipper, order: 50, podSelector: {matchLabels: {app: ship}}, containers: [{name: ship, image: "ghcr.io/a/s:1"}], volumes: [{name: tmp, emptyDir: {}}]}',
      '  - {name: agent, order: 10, containers: [{name: agent, image: "ghcr.io/a/a:1"}], volumes: [{name: agent-state, emptyDir: {}}]}',
      '',
    ].join('\n');
    const own: PodLike = {
      ...app,
      spec: {
        ...app.spec,
        containers: app.spec?.containers ?? [],
        volumes: [
          { name: 'data', emptyDir: {} },
          { name: 'tmp', emptyDir: {} },
        ],
      },
    };
    const once = pass(own, config);
    expect(lists(once.pod).volumes).toEqual(['data', 'tmp', 'outrigger-identity', 'agent-state']);
    const off = { ...own.metadata?.annotations, 'agent.sets.outrigger.dev/inject': 'disabled' };
    const first = pass({ ...own, metadata: { ...own.metadata, annotations: off } }, config);
    expect(first.sets).toEqual(['proxy']);
    const on = { ...first.pod.metadata?.annotations };
    delete on['agent.sets.outrigger.dev/inject'];
    const second = pass(
      { ...first.pod, metadata: { ...first.pod.metadata, annotations: on } },
      config,
    );
    expect(second.sets).toEqual(['agent']);
    expect(lists(second.pod)).toEqual(lists(once.pod));
  });

  it('in the order one pass makes: the classic proxy redirects traffic after the sets start', () => {
    const all = `nativeSidecar: "false"\nsets:\n${[...SHIPPER, ...MORE].join('\n')}\n`;
    expect(lists(pass(app, all).pod)).toEqual({
      initContainers: [
        'fetch-secrets',
        'agent-setup',
        'agent',
        'shipper',
        'outrigger-init',
        'migrate',
        'tail-init',
        'tail',
      ],
      containers: ['outrigger-proxy', 'app', 'tracer'],
      volumes: [
        'data',
        'secrets',
        'outrigger-identity',
        'agent-state',
        'shipper-buffer',
        'tail-spool',
      ],
    });
  });
});

describe('a manifest nobody checked', () => {
  it('a template whose lists hold nulls is skipped with the field named, whatever it carries', () => {
    const manifest = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web}',
      'spec:',
      '  template:',
      '    metadata: {annotations: {outrigger.dev/status: "{}"}}',
      '    spec: {hostNetwork: true, containers: [{name: app, image: x}], volumes: [null]}',
    ].join('\n');
    const { report } = injectManifest(manifest, {
      snapshot: makeSnapshot(mustParseConfig(`sets:\n${SHIPPER.join('\n')}\n`)),
      nativeSidecarSupported: true,
    });
    expect(report).toEqual([
      expect.objectContaining({
        outcome: 'skipped',
        reason: 'invalid-pod-spec',
        detail: 'spec.template.spec.volumes[0] must be a mapping; got null',
      }),
    ]);
  });
});
