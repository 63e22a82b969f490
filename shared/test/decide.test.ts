import {
  decide,
  defaultConfig,
  mustParseConfig,
  type DecideInput,
  type NamespaceMeta,
  type PodLike,
} from '../src';

const config = defaultConfig();
const owner = { kind: 'Deployment', name: 'web', source: 'template' as const };

function pod(
  labels: Record<string, string> = {},
  annotations: Record<string, string> = {},
): PodLike {
  return {
    metadata: { labels, annotations },
    spec: { containers: [{ name: 'app', image: 'app:1' }] },
  };
}

const enabledNs: NamespaceMeta = {
  name: 'shop',
  annotations: { 'outrigger.dev/inject': 'enabled' },
};
const plainNs: NamespaceMeta = { name: 'shop' };

function input(
  p: PodLike,
  namespace: DecideInput['namespace'],
  extra: Partial<DecideInput> = {},
): DecideInput {
  return { pod: p, namespaceName: 'shop', namespace, config, owner, nativeSidecar: true, ...extra };
}

const outcome = (i: DecideInput) => {
  const d = decide(i);
  return d.inject ? 'inject' : d.reason;
};

describe('decide: opt-in precedence (the truth table in decide.ts)', () => {
  const L = 'outrigger.dev/inject';
  it.each([
    // namespace, label, annotation, expected
    ['enabled', undefined, undefined, 'inject'],
    ['enabled', undefined, 'enabled', 'inject'],
    ['enabled', undefined, 'disabled', 'opted-out'],
    ['enabled', 'disabled', undefined, 'opted-out'],
    ['enabled', 'disabled', 'enabled', 'opted-out'],
    ['enabled', 'enabled', 'disabled', 'inject'],
    ['plain', undefined, undefined, 'namespace-not-enabled'],
    ['plain', undefined, 'enabled', 'namespace-not-enabled'],
    ['plain', undefined, 'disabled', 'opted-out'],
    ['plain', 'enabled', undefined, 'inject'],
    ['plain', 'enabled', 'disabled', 'inject'],
    ['plain', 'disabled', undefined, 'opted-out'],
    ['assume', undefined, undefined, 'inject'],
    ['assume', 'disabled', undefined, 'opted-out'],
    ['assume', undefined, 'disabled', 'opted-out'],
  ] as const)('namespace %s, label %s, annotation %s: %s', (ns, label, annotation, expected) => {
    const labels: Record<string, string> = label ? { [L]: label } : {};
    const annotations: Record<string, string> = annotation ? { [L]: annotation } : {};
    const namespace = ns === 'enabled' ? enabledNs : ns === 'plain' ? plainNs : 'assume-enabled';
    expect(outcome(input(pod(labels, annotations), namespace))).toBe(expected);
  });

  it('never injects system and excluded namespaces, even with the pod label', () => {
    const p = pod({ 'outrigger.dev/inject': 'enabled' });
    for (const ns of ['kube-system', 'kube-public', 'kube-node-lease', 'outrigger-system'])
      expect(outcome(input(p, 'assume-enabled', { namespaceName: ns }))).toBe('system-namespace');
    const excluding = mustParseConfig('excludeNamespaces: [legacy]');
    expect(
      outcome(input(p, 'assume-enabled', { namespaceName: 'legacy', config: excluding })),
    ).toBe('system-namespace');
    expect(
      outcome(input(p, 'assume-enabled', { namespaceName: 'ops', systemNamespace: 'ops' })),
    ).toBe('system-namespace');
  });

  it('takes the annotation as the truth when the mirrored label lags', () => {
    const ns = {
      name: 'shop',
      annotations: { 'outrigger.dev/inject': 'disabled' },
      labels: { 'outrigger.dev/injection': 'enabled' },
    };
    expect(outcome(input(pod(), ns))).toBe('namespace-not-enabled');
    expect(
      outcome(input(pod(), { name: 'shop', labels: { 'outrigger.dev/injection': 'enabled' } })),
    ).toBe('inject');
  });
});

describe('decide: what the pod allows', () => {
  it('skips, in order, each named reason', () => {
    const base = pod();
    const withSpec = (spec: object): PodLike => ({
      ...base,
      spec: { containers: [{ name: 'app' }], ...spec },
    });
    expect(outcome(input({ metadata: {} }, enabledNs))).toBe('invalid-pod-spec');
    expect(outcome(input(withSpec({ containers: [] }), enabledNs))).toBe('invalid-pod-spec');
    expect(outcome(input(withSpec({ volumes: 'x' }), enabledNs))).toBe('invalid-pod-spec');
    expect(outcome(input(withSpec({ hostNetwork: true }), enabledNs))).toBe('host-network');
    expect(outcome(input(withSpec({ containers: [{ name: 'istio-proxy' }] }), enabledNs))).toBe(
      'other-mesh-sidecar',
    );
    expect(
      outcome(input(withSpec({ initContainers: [{ name: 'linkerd-proxy' }] }), enabledNs)),
    ).toBe('other-mesh-sidecar');
    expect(outcome(input(withSpec({ containers: [{ name: 'outrigger-proxy' }] }), enabledNs))).toBe(
      'name-collision',
    );
    expect(
      outcome(input(withSpec({ initContainers: [{ name: 'outrigger-init' }] }), enabledNs)),
    ).toBe('name-collision');
    expect(outcome(input(withSpec({ volumes: [{ name: 'outrigger-identity' }] }), enabledNs))).toBe(
      'name-collision',
    );
    const injected: PodLike = {
      metadata: { labels: { 'outrigger.dev/revision': 'abc' } },
      spec: { containers: [{ name: 'app' }], initContainers: [{ name: 'outrigger-proxy' }] },
    };
    expect(outcome(input(injected, enabledNs))).toBe('already-injected');
  });

  it('skips Jobs and CronJobs only when the sidecar would be classic', () => {
    const job = { kind: 'Job', name: 'j', source: 'owner-reference' as const };
    expect(outcome(input(pod(), enabledNs, { owner: job, nativeSidecar: false }))).toBe(
      'job-without-native-sidecar',
    );
    expect(
      outcome(
        input(pod(), enabledNs, { owner: { ...job, kind: 'CronJob' }, nativeSidecar: false }),
      ),
    ).toBe('job-without-native-sidecar');
    expect(outcome(input(pod(), enabledNs, { owner: job, nativeSidecar: true }))).toBe('inject');
  });

  it('never throws on malformed input', () => {
    const garbage: unknown[] = [
      {},
      { spec: null },
      { spec: { containers: [null] } },
      { metadata: 'x', spec: { containers: [{ name: 'a' }] } },
    ];
    for (const g of garbage)
      expect(outcome(input(g as PodLike, enabledNs))).toBe('invalid-pod-spec');
  });
});

describe('decide: pods that run to completion', () => {
  it('skips restartPolicy Never or OnFailure pods when the sidecar would be classic, whoever owns them', () => {
    const argo = { kind: 'Workflow', name: 'w', source: 'owner-reference' as const };
    for (const restartPolicy of ['Never', 'OnFailure']) {
      const p: PodLike = { metadata: {}, spec: { restartPolicy, containers: [{ name: 'main' }] } };
      expect(outcome(input(p, enabledNs, { owner: argo, nativeSidecar: false }))).toBe(
        'job-without-native-sidecar',
      );
      expect(outcome(input(p, enabledNs, { owner: argo, nativeSidecar: true }))).toBe('inject');
    }
  });
});
