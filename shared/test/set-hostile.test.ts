// What a pod's author, or a manifest nobody checked, cannot do to a sidecar set: borrow a set's
// shared volume with a label of their own, meet a pinned revision's volume under a current
// set's name, or end the manual injection with a stack trace.

import { applyPatch, type Operation } from 'fast-json-patch';
import {
  INJECT,
  ManifestParseError,
  cloneJson,
  formatIssue,
  injectManifest,
  injectPod,
  makeSnapshot,
  mustParseConfig,
  parseConfig,
  type Config,
  type PodLike,
} from '../src';

const SHARING = [
  'sets:',
  '  - {name: log-shipper, containers: [{name: shipper, image: "ghcr.io/a/s:1", volumeMounts: [{name: shared-logs, mountPath: /logs}]}], volumes: [{name: shared-logs, emptyDir: {}}]}',
  '  - {name: tracer, order: 150, containers: [{name: tracer, image: "ghcr.io/a/t:1"}], volumes: [{name: shared-logs, emptyDir: {}}]}',
].join('\n');

function inject(pod: PodLike, config: Config) {
  return injectPod({
    pod,
    snapshot: makeSnapshot(config),
    namespaceName: 'shop',
    namespace: { name: 'shop', labels: {}, annotations: { [INJECT]: 'enabled' } },
    nativeSidecarSupported: true,
  });
}

const appWith = (
  labels: Record<string, string>,
  annotations: Record<string, string>,
  volume: Record<string, unknown>,
): PodLike => ({
  metadata: { name: 'p', namespace: 'shop', labels, annotations },
  spec: {
    containers: [{ name: 'app', image: 'ghcr.io/a/app:1' }],
    volumes: [{ name: 'shared-logs', ...volume }],
  },
});

/** How many volumes named shared-logs the pod has once the patch is applied. */
function sharedLogsAfter(pod: PodLike, patch: unknown): number {
  const after = applyPatch(
    cloneJson(pod),
    cloneJson(patch) as Operation[],
    true,
    false,
  ).newDocument;
  return (after.spec?.volumes ?? []).filter((v) => v.name === 'shared-logs').length;
}

describe("a set's shared volume", () => {
  it.each([
    ['without a status annotation', {}],
    ['with a forged status annotation', { 'outrigger.dev/status': '{}' }],
  ])(
    'is not the pod author’s to define with a forged label of the other set (%s)',
    (_, annotations) => {
      const pod = appWith({ 'tracer.sets.outrigger.dev/revision': 'forged' }, annotations, {
        hostPath: { path: '/' },
      });
      const result = inject(pod, mustParseConfig(SHARING));
      if (!result.injected) throw new Error(result.reason);
      expect(result.sets).not.toContain('log-shipper');
      expect(result.warnings).toContain(
        'set log-shipper not added: the pod already has shared-logs; rename it or opt the pod out with log-shipper.sets.outrigger.dev/inject=disabled',
      );
      expect(sharedLogsAfter(pod, result.patch)).toBe(1);
    },
  );

  it('is shared where the pod carries the other set and has the volume as both define it, added once', () => {
    const pod = appWith({ 'tracer.sets.outrigger.dev/revision': 'r' }, {}, { emptyDir: {} });
    const result = inject(pod, mustParseConfig(SHARING));
    if (!result.injected) throw new Error(result.reason);
    expect(result.sets).toContain('log-shipper');
    expect(sharedLogsAfter(pod, result.patch)).toBe(1);
  });

  it('is shared as the API server stored it, with the defaults it added', () => {
    const config = mustParseConfig(
      SHARING.replaceAll('emptyDir: {}', 'configMap: {name: logs-conf}'),
    );
    const pod = appWith(
      { 'tracer.sets.outrigger.dev/revision': 'r' },
      {},
      { configMap: { name: 'logs-conf', defaultMode: 420 } },
    );
    const result = inject(pod, config);
    if (!result.injected) throw new Error(result.reason);
    expect(result.sets).toContain('log-shipper');
    expect(result.warnings.filter((w) => w.includes('log-shipper'))).toEqual([]);
  });

  it('of a pinned revision, defined otherwise than a current set’s of the same name, keeps the later set out', () => {
    const v2 = mustParseConfig(
      [
        'sets:',
        '  - {name: alpha, containers: [{name: a, image: "ghcr.io/a/a:2"}]}',
        '  - {name: beta, order: 150, containers: [{name: b, image: "ghcr.io/a/b:1"}], volumes: [{name: config, configMap: {name: beta-config}}]}',
      ].join('\n'),
    );
    // As a pod pinned to alpha's first revision gets it (pinned-sets.ts): unchecked against beta.
    const pinned: Config = {
      ...v2,
      sets: v2.sets.map((s) =>
        s.name === 'alpha' ? { ...s, volumes: [{ name: 'config', emptyDir: {} }] } : s,
      ),
    };
    const result = inject(
      {
        metadata: { name: 'p', namespace: 'shop' },
        spec: { containers: [{ name: 'app', image: 'x' }] },
      },
      pinned,
    );
    if (!result.injected) throw new Error(result.reason);
    expect(result.sets).toEqual(['proxy', 'alpha']);
    expect(result.warnings).toEqual([
      'set beta not added: it would take the volume config of set alpha, defined otherwise in this pod; give it names and ports of its own',
    ]);
  });
});

describe('the configuration', () => {
  it('refuses a set that selects on outrigger.dev/stamped, a label injection adds', () => {
    const result = parseConfig(
      'sets:\n  - {name: s, podSelector: {matchExpressions: [{key: outrigger.dev/stamped, operator: DoesNotExist}]}, containers: [{name: c, image: "ghcr.io/a/b:1"}]}\n',
    );
    expect(result.ok ? [] : result.errors.map(formatIssue)).toEqual([
      expect.stringContaining('selects on outrigger.dev/stamped, a label injection itself adds'),
    ]);
  });

  it('names a list that is not one, without a fault of its own', () => {
    const result = parseConfig('sets:\n  - {name: s, containers: {name: a, image: b}}\n');
    const errors = result.ok ? [] : result.errors.map(formatIssue);
    expect(errors[0]).toBe('.sets[0].containers (line 2): must be a list; got a mapping');
    expect(errors.join('\n')).not.toContain('fault in Outrigger');
  });
});

describe('a manifest nobody checked', () => {
  const options = { snapshot: makeSnapshot(mustParseConfig('')), nativeSidecarSupported: true };
  const pod = (extra: string) =>
    `apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: app, image: x}]\n${extra}`;

  it('refuses an alias inside its own anchor, and a List of itself, as a problem with the document', () => {
    expect(() => injectManifest(pod('  affinity: &a {self: *a}\n'), options)).toThrow(
      ManifestParseError,
    );
    expect(() =>
      injectManifest('kind: List\nitems: &i [{kind: List, items: *i}]\n', options),
    ).toThrow(/refers to itself/);
  });

  it('skips a workload whose name is not a string, naming the field', () => {
    const { report } = injectManifest(
      'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: 2048}\nspec: {template: {spec: {containers: [{name: a, image: x}]}}}\n',
      options,
    );
    expect(report).toEqual([
      expect.objectContaining({
        outcome: 'skipped',
        reason: 'invalid-pod-spec',
        detail: 'metadata.name must be a string; got number 2048',
      }),
    ]);
  });

  it('reads merge keys as kubectl does, and writes strings kubectl would read as booleans quoted', () => {
    const text = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: web}',
      'spec:',
      '  template:',
      '    metadata:',
      "      labels: {<<: {app: web}, tracing: 'on'}",
      '    spec:',
      '      containers: [{name: app, image: x}]',
    ].join('\n');
    const { output, report } = injectManifest(text, options);
    expect(report).toEqual([expect.objectContaining({ outcome: 'injected' })]);
    expect(output).toContain('app: web');
    expect(output).toContain('tracing: "on"');
  });
});
