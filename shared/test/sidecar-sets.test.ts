// The sets of the configuration: how they are read, in which order they apply, what their
// revision covers, and the conflicts between sets that can meet on one pod.

import {
  appliedSets,
  configRevision,
  formatIssue,
  mustParseConfig,
  parseConfig,
  selectorsOverlap,
  type LabelSelector,
} from '../src';

const shipper = (extra = ''): string =>
  [
    '  - name: log-shipper',
    '    containers:',
    '      - name: shipper',
    '        image: ghcr.io/acme/shipper:1.0',
    '        ports: [{containerPort: 2020}]',
    '    volumes:',
    '      - {name: shipper-buffer, emptyDir: {}}',
    extra,
  ]
    .filter((l) => l !== '')
    .join('\n');

function errorsOf(text: string): string[] {
  const result = parseConfig(text);
  if (result.ok) throw new Error('expected the configuration to be refused');
  return result.errors.map(formatIssue);
}

describe('sidecar sets in the configuration', () => {
  it('a configuration without sets has none, and the proxy keeps its revision', () => {
    const plain = mustParseConfig('proxy:\n  image: ghcr.io/outrigger/proxy:1.0.0\n');
    expect(plain.sets).toEqual([]);
    const withSet = mustParseConfig(
      `proxy:\n  image: ghcr.io/outrigger/proxy:1.0.0\nsets:\n${shipper()}\n`,
    );
    // Adding a set is not a new proxy revision: pods pinned to the proxy stay pinned.
    expect(configRevision(withSet)).toBe(configRevision(plain));
  });

  it('reads a set with its defaults', () => {
    const [set] = mustParseConfig(`sets:\n${shipper()}\n`).sets;
    expect(set).toEqual({
      name: 'log-shipper',
      order: 100,
      containers: [
        { name: 'shipper', image: 'ghcr.io/acme/shipper:1.0', ports: [{ containerPort: 2020 }] },
      ],
      initContainers: [],
      volumes: [{ name: 'shipper-buffer', emptyDir: {} }],
      nativeSidecar: 'auto',
      position: 'before-app',
    });
  });

  it('applies sets by order, then by name, whatever their place in the list', () => {
    const config = mustParseConfig(
      [
        'sets:',
        '  - {name: zeta, order: 5, containers: [{name: z, image: "ghcr.io/acme/z:1"}]}',
        '  - {name: alpha, order: 5, containers: [{name: a, image: "ghcr.io/acme/a:1"}]}',
        '  - {name: early, order: -1, containers: [{name: e, image: "ghcr.io/acme/e:1"}]}',
        '  - {name: late, containers: [{name: l, image: "ghcr.io/acme/l:1"}]}',
      ].join('\n'),
    );
    expect(appliedSets(config).map((a) => a.set.name)).toEqual(['early', 'alpha', 'zeta', 'late']);
  });

  it("a set's revision follows what it adds, not which pods it selects", () => {
    const rev = (extra: string, image = '1.0') =>
      appliedSets(
        mustParseConfig(`sets:\n${shipper(extra).replace('shipper:1.0', `shipper:${image}`)}\n`),
      )[0]?.revision;
    const base = rev('');
    expect(base).toMatch(/^[0-9a-f]{10}$/);
    expect(rev('    podSelector: {matchLabels: {logs: "on"}}')).toBe(base);
    expect(rev('    ownerKinds: [Deployment]')).toBe(base);
    expect(rev('', '1.1')).not.toBe(base);
    expect(rev('    position: after-app')).not.toBe(base);
  });

  it('refuses what a set cannot be, naming the field', () => {
    expect(
      errorsOf(
        [
          'sets:',
          '  - name: proxy',
          '    containers: [{name: p, image: "ghcr.io/acme/p:1"}]',
          '  - name: Bad_Name',
          '    containers: [{name: q, image: "ghcr.io/acme/q:1"}]',
          '  - name: empty',
          '  - name: shell',
          '    containers: [{name: s, image: "ghcr.io/acme/s:1", restartPolicy: Always}]',
          '    ownerKinds: [Deployment, CronJob]',
          '  - containers: [{name: t, image: "ghcr.io/acme/t:1"}]',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[0].name (line 2): "proxy" is the default set\'s name (.proxy and .init); choose another',
      `.sets[1].name (line 4): must be a DNS-1123 label (lower-case letters, digits and '-', at most 40 characters); got "Bad_Name"`,
      '.sets[2] (line 6): set empty must add at least one container or init container',
      '.sets[3].ownerKinds[1] (line 9): must be one of Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, Pod; got string "CronJob"',
      '.sets[3].containers[0].restartPolicy (line 8): is set by Outrigger (Always for a native sidecar); leave it out and use .nativeSidecar',
      '.sets[4].name: is required: every set has a name',
    ]);
  });
});

describe('conflicts between sets', () => {
  const agent = (
    selector: string,
    container = 'agent',
    port = 9000,
    volume = '{name: shared, emptyDir: {}}',
  ) =>
    [
      '  - name: agent',
      selector,
      '    containers:',
      `      - {name: ${container}, image: "ghcr.io/acme/agent:1", ports: [{containerPort: ${port}}]}`,
      `    volumes: [${volume}]`,
    ]
      .filter((l) => l !== '')
      .join('\n');
  const tracer = (selector: string) =>
    [
      '  - name: tracer',
      selector,
      '    containers:',
      '      - {name: agent, image: "ghcr.io/acme/tracer:1", ports: [{containerPort: 9000}]}',
      '    volumes: [{name: shared, emptyDir: {medium: Memory}}]',
    ]
      .filter((l) => l !== '')
      .join('\n');

  it('two sets that can meet may not share a container, a port, or a volume name for two volumes', () => {
    expect(errorsOf(`sets:\n${agent('')}\n${tracer('')}\n`)).toEqual([
      '.sets[1].containers[0].name (line 8): sets agent and tracer can select the same pod, and both add a container named agent (.sets[0].containers[0].name): rename one, or give the sets selectors that cannot both match',
      ".sets[1].containers[0].ports[0].containerPort (line 8): sets agent and tracer can select the same pod, and both use port 9000 (agent's container agent, .sets[0].containers[0].ports[0].containerPort): give tracer's container agent another port, or give the sets selectors that cannot both match",
      '.sets[1].volumes[0].name (line 9): sets agent and tracer can select the same pod, and both add a volume named shared that is not the same volume (.sets[0].volumes[0].name): make the two definitions equal to share it, or rename one',
    ]);
  });

  it("a set may not take the proxy's names or ports", () => {
    expect(
      errorsOf(`sets:\n${agent('', 'outrigger-proxy', 4191, '{name: scratch, emptyDir: {}}')}\n`),
    ).toEqual([
      '.sets[0].containers[0].name (line 4): sets proxy and agent can select the same pod, and both add a container named outrigger-proxy (.proxy.name): rename one, or give the sets selectors that cannot both match',
      ".sets[0].containers[0].ports[0].containerPort (line 4): sets proxy and agent can select the same pod, and both use port 4191 (proxy's container outrigger-proxy, .proxy.ports.admin): give agent's container outrigger-proxy another port, or give the sets selectors that cannot both match",
    ]);
  });

  it('sets kept apart by their pod labels, their namespaces or their owner kinds may reuse names', () => {
    for (const [a, b] of [
      ['    podSelector: {matchLabels: {team: a}}', '    podSelector: {matchLabels: {team: b}}'],
      [
        '    namespaceSelector: {matchExpressions: [{key: env, operator: Exists}]}',
        '    namespaceSelector: {matchExpressions: [{key: env, operator: DoesNotExist}]}',
      ],
      ['    ownerKinds: [Deployment]', '    ownerKinds: [StatefulSet, DaemonSet]'],
    ] as const) {
      expect(parseConfig(`sets:\n${agent(a)}\n${tracer(b)}\n`)).toMatchObject({ ok: true });
    }
  });

  it('two sets that can meet may not bind the same host port, though their container ports differ', () => {
    const host = (name: string, port: number) =>
      `  - {name: ${name}, containers: [{name: ${name}, image: "ghcr.io/acme/${name}:1", ports: [{containerPort: ${port}, hostPort: 9100}]}]}`;
    expect(errorsOf(`sets:\n${host('exporter', 9100)}\n${host('collector', 9200)}\n`)).toEqual([
      ".sets[1].containers[0].ports[0].hostPort (line 3): sets exporter and collector can select the same pod, and both use host port 9100 (exporter's container exporter, .sets[0].containers[0].ports[0].hostPort): give collector's container collector another port, or give the sets selectors that cannot both match",
    ]);
  });

  it('an equal volume is shared, and two sets of one name are refused', () => {
    const same = `sets:\n${agent('', 'a1', 9001, '{name: shared, emptyDir: {medium: Memory}}')}\n${tracer('')}\n`;
    expect(parseConfig(same)).toMatchObject({ ok: true });
    expect(errorsOf(`sets:\n${shipper()}\n${shipper()}\n`)).toContain(
      '.sets[1].name (line 9): set log-shipper is already defined at .sets[0]',
    );
  });
});

describe('selectorsOverlap', () => {
  const cases: [LabelSelector | undefined, LabelSelector | undefined, boolean][] = [
    [undefined, undefined, true],
    [{ matchLabels: { a: '1' } }, undefined, true],
    [{ matchLabels: { a: '1' } }, { matchLabels: { a: '2' } }, false],
    [{ matchLabels: { a: '1' } }, { matchLabels: { b: '2' } }, true],
    [
      { matchLabels: { a: '1' } },
      { matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] },
      false,
    ],
    [
      { matchLabels: { a: '1' } },
      { matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['2'] }] },
      true,
    ],
    [
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['1', '2'] }] },
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['2', '3'] }] },
      true,
    ],
    [
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] },
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['3'] }] },
      false,
    ],
    [
      { matchExpressions: [{ key: 'a', operator: 'Exists' }] },
      { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] },
      false,
    ],
    [
      { matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] },
      { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] },
      true,
    ],
    [
      { matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] },
      { matchExpressions: [{ key: 'a', operator: 'DoesNotExist' }] },
      false,
    ],
  ];
  it.each(cases)('%j and %j: %s', (a, b, expected) => {
    expect(selectorsOverlap(a, b)).toBe(expected);
    expect(selectorsOverlap(b, a)).toBe(expected);
  });
});

describe('bounds on sets', () => {
  it('refuses more than 64 sets (before comparing their pairs), and more than 16 containers in one', () => {
    const many = Array.from(
      { length: 1000 },
      (_, i) => `  - {name: s${i}, containers: [{name: c${i}, image: "ghcr.io/acme/c:1"}]}`,
    ).join('\n');
    expect(errorsOf(`sets:\n${many}\n`)).toEqual([
      '.sets (line 2): at most 64 sets; got 1000 (merge sets that always go together)',
    ]);
    const wide = Array.from(
      { length: 17 },
      (_, i) => `{name: c${i}, image: "ghcr.io/acme/c:1"}`,
    ).join(', ');
    expect(errorsOf(`sets:\n  - {name: wide, containers: [${wide}]}\n`)).toEqual([
      '.sets[0].containers (line 2): a set may add at most 16 containers; got 17',
    ]);
  });
});

describe('what a set may not be', () => {
  it("refuses the proxy's volume, too many ports, a kind named twice, and selecting on labels injection adds", () => {
    const ports = Array.from({ length: 17 }, (_, i) => `{containerPort: ${30000 + i}}`).join(', ');
    expect(
      errorsOf(
        [
          'sets:',
          '  - name: a',
          '    containers: [{name: a, image: "ghcr.io/acme/a:1"}]',
          '    volumes: [{name: outrigger-identity, emptyDir: {}}]',
          '  - name: b',
          `    containers: [{name: b, image: "ghcr.io/acme/b:1", ports: [${ports}]}]`,
          '    ownerKinds: [Job, Job]',
          '    podSelector: {matchExpressions: [{key: a.sets.outrigger.dev/revision, operator: Exists}]}',
        ].join('\n'),
      ),
    ).toEqual([
      ".sets[0].volumes[0].name (line 4): outrigger-identity is the proxy's volume; give the set's its own name",
      '.sets[1].containers[0].ports (line 6): a container of a set may declare at most 16 ports; got 17',
      '.sets[1].ownerKinds (line 7): names a kind twice',
      ".sets[1].podSelector (line 8): selects on a.sets.outrigger.dev/revision, a label injection itself adds: a second look at the pod would decide otherwise; select on the app's own labels",
    ]);
  });

  it('lists at most 100 problems of one document, and counts the rest', () => {
    const bad = Array.from(
      { length: 150 },
      (_, i) => `  - {name: Bad${i}, containers: [{name: c, image: "i:1"}]}`,
    ).join('\n');
    const errors = errorsOf(`sets:\n${bad}\n`);
    expect(errors).toHaveLength(101);
    expect(errors[100]).toBe('. (line 1): and 50 more problems, not listed: fix these first');
  });
});
