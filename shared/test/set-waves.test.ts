// Each sidecar set's wave: its own stamp in the template, its own restart records, its own wave
// record on the ConfigMap and its own history, none of which reads or moves another set's or the
// proxy's. Pure parts: the assessment, the restart's patch, the stamps at admission, the history
// and the revision a pinned pod gets.

import {
  CONFIG_REVISION,
  PROXY_KEYS,
  appliedSets,
  choosePinnedSets,
  makeSnapshot,
  mustParseConfig,
  readSetHistory,
  readWave,
  restartPatch,
  setHistoryDataPatch,
  setHistoryKey,
  setRevisionContent,
  setStampAnnotations,
  setWaveKeys,
  templateChanged,
  withSetStamps,
  type AppliedSet,
  type KubeObject,
  type SetStampWanted,
} from '../src';
import { NOW, R1, assess, configWith, workload } from './owner-fixtures';

const YAML = (shipperImage: string): string =>
  [
    'rollout: {canary: {count: 0}}',
    'sets:',
    '  - name: shipper',
    '    podSelector: {matchLabels: {logs: "on"}}',
    `    containers: [{name: shipper, image: "${shipperImage}"}]`,
    '    rollout: {maxConcurrent: 1, canary: {count: 1, soakSeconds: 30}}',
    '  - name: agent',
    '    containers: [{name: agent, image: "ghcr.io/acme/agent:1"}]',
  ].join('\n');

const config1 = mustParseConfig(YAML('ghcr.io/acme/shipper:1'));
const config2 = mustParseConfig(YAML('ghcr.io/acme/shipper:2'));
const setOf = (config: typeof config1, name: string): AppliedSet => {
  const found = appliedSets(config).find((a) => a.set.name === name);
  if (!found) throw new Error(`no set ${name}`);
  return found;
};
const shipper1 = setOf(config1, 'shipper');
const shipper2 = setOf(config2, 'shipper');
const agent = setOf(config1, 'agent');
const SHIPPER = setWaveKeys('shipper');

/** A Deployment with the logs label, stamped for the proxy and the given set revisions. */
const logged = (sets: Record<string, string>, extra: { name?: string; labels?: object } = {}) =>
  workload({
    name: extra.name ?? 'web',
    templateLabels: { logs: 'on', ...extra.labels },
    templateAnnotations: Object.fromEntries(
      Object.entries(sets).map(([set, rev]) => [setWaveKeys(set).configRevision, rev]),
    ),
  });

const assessSet = (w: ReturnType<typeof workload>, set: AppliedSet) =>
  assess(w, { config: configWith(), revision: set.revision, set });

describe('a set wave names its own keys', () => {
  test('under <set>.sets.outrigger.dev/, the pod label being the set revision label', () => {
    expect(SHIPPER.configRevision).toBe('shipper.sets.outrigger.dev/config-revision');
    expect(SHIPPER.completedRevision).toBe('shipper.sets.outrigger.dev/completed-revision');
    expect(SHIPPER.podRevision).toBe('shipper.sets.outrigger.dev/revision');
    expect(SHIPPER.waveStage).toBe('shipper.sets.outrigger.dev/wave-stage');
    expect(new Set(Object.values(SHIPPER)).size).toBe(Object.keys(SHIPPER).length);
    for (const [k, v] of Object.entries(SHIPPER))
      if (k !== 'set') expect(v).not.toBe(PROXY_KEYS[k as keyof typeof PROXY_KEYS]);
  });

  test("a set's wave record is read apart from the proxy's", () => {
    const annotations = {
      'outrigger.dev/wave-stopped': `${R1} shop/Deployment/web proxy-failing`,
      [SHIPPER.lastGood]: 'aaaaaaaaaa',
    };
    expect(readWave(annotations).stopped?.revision).toBe(R1);
    expect(readWave(annotations, SHIPPER).stopped).toBeUndefined();
    expect(readWave(annotations, SHIPPER).lastGood).toBe('aaaaaaaaaa');
    expect(readWave(annotations).lastGood).toBeUndefined();
  });
});

describe('assessing an owner for a set', () => {
  test('current when its template carries the set revision', () => {
    const a = assessSet(logged({ shipper: shipper1.revision }), shipper1);
    expect([a.state, a.due, a.pinned]).toEqual(['current', undefined, shipper1.revision]);
  });

  test('outdated for the set alone when the set changed', () => {
    const w = logged({ shipper: shipper1.revision });
    const a = assessSet(w, shipper2);
    expect(a.state).toBe('outdated');
    expect(a.due?.detail).toContain(`set shipper stamped with revision ${shipper1.revision}`);
    // The proxy's own assessment of the same owner does not move.
    expect(assess(w).state).toBe('current');
  });

  test('outdated when the template predates the set', () => {
    const a = assessSet(logged({}), shipper1);
    expect(a.state).toBe('outdated');
    expect(a.pinned).toBeUndefined();
  });

  test('out of scope where the set does not select the template, or it opted out of the set', () => {
    const other = workload({ name: 'api' });
    expect(assessSet(other, shipper1).state).toBe('not-enabled');
    expect(assessSet(other, shipper1).detail).toContain('podSelector does not match');
    const optedOut = logged({}, { labels: { 'shipper.sets.outrigger.dev/inject': 'disabled' } });
    expect(assessSet(optedOut, shipper1).state).toBe('not-enabled');
    // A set without selectors takes every opted-in owner.
    expect(assessSet(other, agent).state).toBe('outdated');
  });

  test("a set's restart of its own is followed through its own records", () => {
    const w = logged({ shipper: shipper2.revision }, {});
    w.metadata = {
      ...w.metadata,
      annotations: {
        [SHIPPER.restartedRevision]: shipper2.revision,
        [SHIPPER.restartedAt]: new Date(NOW - 30_000).toISOString(),
      },
    };
    (w as { status?: unknown }).status = {
      observedGeneration: 2,
      replicas: 2,
      updatedReplicas: 1,
      readyReplicas: 1,
      availableReplicas: 1,
      conditions: [{ type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated' }],
    };
    w.metadata.generation = 2;
    const a = assessSet(w, shipper2);
    expect(a.following).toBe(true);
    expect(assess(w).inFlight).toBe(false);
  });
});

describe("a set's restart patch", () => {
  const w = logged({ shipper: shipper1.revision });
  const order = {
    owner: { namespace: 'shop', kind: 'Deployment' as const, name: 'web' },
    kind: 'rollout' as const,
    revision: shipper2.revision,
  };

  test("stamps the set's revision and records the restart under its names only", () => {
    const patch = restartPatch({ workload: w, order, nowMs: NOW, keys: SHIPPER });
    const text = JSON.stringify(patch);
    expect(patch).toMatchObject({
      metadata: {
        labels: { [SHIPPER.completedRevision]: null },
        annotations: { [SHIPPER.restartedRevision]: shipper2.revision },
      },
      spec: {
        template: { metadata: { annotations: { [SHIPPER.configRevision]: shipper2.revision } } },
      },
    });
    expect(text).not.toContain('"outrigger.dev/');
    expect(text).not.toContain(`"${CONFIG_REVISION}"`);
  });

  test('a canary and a rollback are marked under the set names', () => {
    const canary = restartPatch({
      workload: w,
      order: { ...order, canary: true },
      nowMs: NOW,
      keys: SHIPPER,
    });
    expect(JSON.stringify(canary)).toContain(SHIPPER.canaryRevision);
    const back = restartPatch({
      workload: w,
      order: { ...order, kind: 'rollback', revision: shipper1.revision, from: shipper2.revision },
      nowMs: NOW,
      keys: SHIPPER,
    });
    expect(JSON.stringify(back)).toContain(`"${SHIPPER.rolledBackFrom}":"${shipper2.revision}"`);
  });

  test("a change of a set's stamp alone is no change of the template to the proxy", () => {
    const after = logged({ shipper: shipper2.revision });
    expect(templateChanged(w, after)).toBe(false);
  });
});

describe('set stamps at admission', () => {
  const want = (held: string[] = []): SetStampWanted[] => [
    { key: SHIPPER.configRevision, revision: shipper2.revision, held: (r) => held.includes(r) },
  ];
  const d = (annotations: Record<string, string>, image = 'web:1'): KubeObject => ({
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      template: { metadata: { annotations }, spec: { containers: [{ name: 'app', image }] } },
    },
  });
  const pinned = { [SHIPPER.configRevision]: shipper1.revision };

  test('a create is stamped with the current revision', () => {
    expect(setStampAnnotations(d({}), undefined, want())).toEqual({
      [SHIPPER.configRevision]: shipper2.revision,
    });
  });

  test("the controller's move of the stamp is kept", () => {
    const moved = { [SHIPPER.configRevision]: shipper2.revision };
    expect(setStampAnnotations(d(moved), d(pinned), want())).toEqual({});
  });

  test('a template change keeps the pinned revision while the history holds it', () => {
    expect(setStampAnnotations(d(pinned, 'web:2'), d(pinned), want([shipper1.revision]))).toEqual(
      {},
    );
    expect(setStampAnnotations(d(pinned, 'web:2'), d(pinned), want())).toEqual({
      [SHIPPER.configRevision]: shipper2.revision,
    });
  });

  test('an update that drops the stamp and changes nothing else gets it back; none is added', () => {
    expect(setStampAnnotations(d({}), d(pinned), want())).toEqual(pinned);
    expect(setStampAnnotations(d({}), d({}), want())).toEqual({});
  });

  test("merged into the proxy's operation that creates the annotations", () => {
    const ops = withSetStamps(
      [{ op: 'add', path: '/spec/template/metadata/annotations', value: { a: '1' } }],
      d({}),
      pinned,
    );
    expect(ops).toEqual([
      { op: 'add', path: '/spec/template/metadata/annotations', value: { a: '1', ...pinned } },
    ]);
  });
});

describe("the sets' history", () => {
  const entriesOf = (patch: Record<string, string | null>) =>
    readSetHistory(
      Object.fromEntries(Object.entries(patch).filter((e): e is [string, string] => e[1] !== null)),
    );

  test("records each set's revision, read back as what its key says", () => {
    const patch = setHistoryDataPatch({
      history: [],
      sets: config1.sets,
      nowMs: NOW,
      limit: 3,
      keep: new Set(),
      budgetBytes: 1 << 20,
    });
    const read = entriesOf(patch);
    expect(read.problems).toEqual([]);
    expect(read.entries.map((e) => setHistoryKey(e.set, e.revision)).sort()).toEqual(
      [setHistoryKey('agent', agent.revision), setHistoryKey('shipper', shipper1.revision)].sort(),
    );
    expect(read.entries.find((e) => e.set === 'shipper')?.content).toEqual(
      setRevisionContent(shipper1.set),
    );
  });

  test('an entry whose content is not its key is refused, not thrown', () => {
    const key = setHistoryKey('shipper', shipper2.revision);
    const wrong = JSON.stringify({
      acceptedAt: '2025-01-01T00:00:00Z',
      set: setRevisionContent(shipper1.set),
    });
    const read = readSetHistory({ [key]: wrong, 'shipper.x': '{', 'agent.y': '[[[[' });
    expect(read.entries).toEqual([]);
    expect(read.invalid.sort()).toEqual(['agent.y', key, 'shipper.x'].sort());
  });

  test('an entry nested past the stack is refused, never thrown', () => {
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const text = `{"acceptedAt":"2026-05-01T12:00:00Z","set":{"name":"shipper","containers":[{"name":"s","image":"x:1","env":${deep}}]}}`;
    const read = readSetHistory({ 'shipper.abc': text });
    expect(read.entries).toEqual([]);
    expect(read.invalid).toEqual(['shipper.abc']);
  });

  test('drops revisions past the limit, never one in use or current', () => {
    const old = setHistoryDataPatch({
      history: [],
      sets: config1.sets,
      nowMs: NOW - 1000,
      limit: 2,
      keep: new Set(),
      budgetBytes: 1 << 20,
    });
    const history = entriesOf(old).entries;
    const limit1 = { sets: config2.sets, nowMs: NOW, limit: 1, budgetBytes: 1 << 20 };
    const dropped = setHistoryDataPatch({ ...limit1, history, keep: new Set() });
    expect(dropped[setHistoryKey('shipper', shipper1.revision)]).toBeNull();
    expect(dropped[setHistoryKey('shipper', shipper2.revision)]).toEqual(expect.any(String));
    const kept = setHistoryDataPatch({
      ...limit1,
      history,
      keep: new Set([setHistoryKey('shipper', shipper1.revision)]),
    });
    expect(kept[setHistoryKey('shipper', shipper1.revision)]).toBeUndefined();
  });
});

describe('the revision of each set a pod gets', () => {
  const snapshot = makeSnapshot(config2);
  const held = new Map([
    ['shipper', new Map([[shipper1.revision, setRevisionContent(shipper1.set)]])],
  ]);

  test('the pinned one while the history holds it, the other sets as configured', () => {
    const choice = choosePinnedSets(
      snapshot,
      { [SHIPPER.configRevision]: shipper1.revision },
      held,
    );
    const sets = appliedSets(choice.snapshot.config);
    expect(sets.find((a) => a.set.name === 'shipper')?.revision).toBe(shipper1.revision);
    expect(sets.find((a) => a.set.name === 'shipper')?.set.podSelector).toEqual(
      shipper2.set.podSelector,
    );
    expect(sets.find((a) => a.set.name === 'agent')?.revision).toBe(agent.revision);
    expect(choice.snapshot.revision).toBe(snapshot.revision);
    expect(choice.fallbacks).toEqual([]);
    // The same combination is one snapshot, so its parts are built once.
    expect(
      choosePinnedSets(snapshot, { [SHIPPER.configRevision]: shipper1.revision }, held).snapshot,
    ).toBe(choice.snapshot);
  });

  test('the current one, with a fallback named, when the history lost it; the current one unstamped', () => {
    const lost = choosePinnedSets(snapshot, { [SHIPPER.configRevision]: 'ffffffffff' }, held);
    expect(lost.snapshot).toBe(snapshot);
    expect(lost.fallbacks).toEqual([{ set: 'shipper', requested: 'ffffffffff' }]);
    expect(choosePinnedSets(snapshot, undefined, held).snapshot).toBe(snapshot);
    expect(choosePinnedSets(snapshot, {}, held).snapshot).toBe(snapshot);
  });
});

test('a set may set its own rollout; a key it may not set is refused', () => {
  expect(shipper1.set.rollout).toEqual({ maxConcurrent: 1, canary: { count: 1, soakSeconds: 30 } });
  expect(() =>
    mustParseConfig(`${YAML('ghcr.io/acme/shipper:1')}\n    rollout: {history: 3}`),
  ).toThrow(/history/);
});

describe('what a review found', () => {
  test("a set's history entry is read by the set alone, not against the default proxy", () => {
    // Valid where the proxy's admin port moved away from 4191; the default proxy's is 4191.
    const moved = mustParseConfig(
      [
        'proxy: {ports: {inbound: 5143, outbound: 5140, admin: 5191}}',
        'sets:',
        '  - name: logs',
        '    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1", ports: [{containerPort: 4191}]}]',
      ].join('\n'),
    );
    const patch = setHistoryDataPatch({
      history: [],
      sets: moved.sets,
      nowMs: NOW,
      limit: 3,
      keep: new Set(),
      budgetBytes: 1 << 20,
    });
    const data = Object.fromEntries(
      Object.entries(patch).filter((e): e is [string, string] => e[1] !== null),
    );
    const read = readSetHistory(data);
    expect(read.problems).toEqual([]);
    expect(read.entries.map((e) => e.set)).toEqual(['logs']);
  });

  test('the webhook would leave a set out of a template that uses its names, or whose proxy is opted out: no wave rolls it', () => {
    const taken = workload({
      templateLabels: { logs: 'on' },
    });
    const template = taken.spec?.template as { spec: { containers: { name: string }[] } };
    template.spec.containers.push({ name: 'shipper' });
    expect(assessSet(taken, shipper1).state).toBe('not-enabled');
    expect(assessSet(taken, shipper1).detail).toContain('the template already has shipper');
    const noProxy = logged({}, { labels: { 'proxy.sets.outrigger.dev/inject': 'disabled' } });
    expect(assessSet(noProxy, shipper1).detail).toContain('the proxy is opted out');
  });

  test('an update that leaves the template alone keeps the stamp of a set that no longer selects it', () => {
    const stale = { [setWaveKeys('gone').configRevision]: 'cccccccccc' };
    const d = (annotations: Record<string, string>): KubeObject => ({
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop' },
      spec: { template: { metadata: { annotations }, spec: { containers: [{ name: 'app' }] } } },
    });
    const wanted = [
      { key: SHIPPER.configRevision, revision: shipper1.revision, held: () => false },
    ];
    expect(setStampAnnotations(d({}), d(stale), wanted)).toEqual(stale);
  });

  test("a set's shed changes the template even when it takes the stamp off", () => {
    const w = logged({ shipper: shipper1.revision });
    const shed = restartPatch({
      workload: w,
      order: {
        owner: { namespace: 'shop', kind: 'Deployment', name: 'web' },
        kind: 'shed',
        revision: 'none',
      },
      nowMs: NOW,
      keys: SHIPPER,
    }) as { spec: { template: { metadata: { annotations: Record<string, string | null> } } } };
    expect(shed.spec.template.metadata.annotations).toEqual({
      [SHIPPER.configRevision]: null,
      [SHIPPER.restartedAt]: expect.any(String),
    });
  });
});
