// A set's ports against the pod's own. The containers of a pod share one network, so a set
// that declares a port one of the app's containers declares would not get it (or would take it
// from the app); in a host-network pod every port is a host port, and the API server refuses a
// pod whose containers take the same host port, or whose hostPort is not its containerPort.
// Such a set is left out of that pod, with a warning, as a set whose container name the pod uses.

import {
  INJECT,
  appliedSets,
  injectPod,
  makeSnapshot,
  matchSets,
  mustParseConfig,
  setSelectsTemplate,
  type NamespaceMeta,
  type PodLike,
} from '../src';

const config = mustParseConfig(
  [
    'sets:',
    '  - name: log-shipper',
    '    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1.0", ports: [{containerPort: 2020}]}]',
    '  - name: node-agent',
    '    nativeSidecar: "false"',
    '    containers:',
    '      - {name: agent, image: "ghcr.io/acme/agent:2", ports: [{containerPort: 9100, hostPort: 9000}, {containerPort: 53, protocol: UDP}]}',
  ].join('\n'),
);
const snapshot = makeSnapshot(config);
const namespace: NamespaceMeta = { name: 'ops', labels: {}, annotations: { [INJECT]: 'enabled' } };

function pod(spec: Record<string, unknown>): PodLike {
  return {
    metadata: {
      name: 'agent-x1',
      namespace: 'ops',
      labels: { app: 'collector' },
      annotations: {
        'outrigger.dev/owner-kind': 'DaemonSet',
        'outrigger.dev/owner-name': 'collector',
      },
    },
    spec: { containers: [{ name: 'app', image: 'ghcr.io/acme/collector:1' }], ...spec },
  };
}

const app = (ports: Record<string, unknown>[]) => [
  { name: 'app', image: 'ghcr.io/acme/collector:1', ports },
];

function inject(p: PodLike) {
  const result = injectPod({
    pod: p,
    snapshot,
    namespaceName: 'ops',
    namespace,
    nativeSidecarSupported: true,
  });
  return {
    sets: result.injected ? result.sets : [],
    proxySkipped: result.injected ? result.proxySkipped?.reason : result.reason,
    warnings: result.warnings,
  };
}

describe("a set's ports against the pod's own", () => {
  it('a pod without ports of its own gets every set', () => {
    expect(inject(pod({})).sets).toEqual(['proxy', 'log-shipper', 'node-agent']);
  });

  it("a pod's ports of the wrong shape are not read as ports, and throw nothing", () => {
    const odd: unknown[] = [
      'ports',
      null,
      [null, 7, 'x', { containerPort: '2020' }, { containerPort: null, hostPort: 9000 }],
      [{ containerPort: 2020.5 }, { containerPort: -1, protocol: 7 }],
    ];
    for (const ports of odd) {
      const containers = [{ name: 'app', image: 'a', ports }];
      expect(inject(pod({ containers })).sets).toEqual(['proxy', 'log-shipper', 'node-agent']);
      expect(inject(pod({ containers, hostNetwork: true })).sets).toEqual(['log-shipper']);
    }
  });

  it("a set that declares a port of the app's is left out, with a warning naming the port", () => {
    const result = inject(pod({ containers: app([{ containerPort: 2020 }]) }));
    expect(result.sets).toEqual(['proxy', 'node-agent']);
    expect(result.warnings).toEqual([
      "set log-shipper not added: the pod already has port 2020; change the set's port or opt the pod out with log-shipper.sets.outrigger.dev/inject=disabled",
    ]);
  });

  it('the same number under another protocol is another port', () => {
    const result = inject(pod({ containers: app([{ containerPort: 2020, protocol: 'UDP' }]) }));
    expect(result.sets).toEqual(['proxy', 'log-shipper', 'node-agent']);
  });

  it("the app's init containers count against the sidecars that run beside them, its native sidecars against every set", () => {
    const init = (port: Record<string, unknown>, restartPolicy?: string) =>
      pod({ initContainers: [{ name: 'warm', image: 'w', ports: [port], restartPolicy }] });
    // The shipper is a native sidecar before the app: it starts before the app's init
    // containers and runs beside them. The agent is classic: it starts after they have ended.
    expect(inject(init({ containerPort: 2020 })).sets).toEqual(['proxy', 'node-agent']);
    expect(inject(init({ containerPort: 53, protocol: 'UDP' })).sets).toEqual([
      'proxy',
      'log-shipper',
      'node-agent',
    ]);
    // A native sidecar of the app's own runs as long as the pod.
    expect(inject(init({ containerPort: 53, protocol: 'UDP' }, 'Always')).sets).toEqual([
      'proxy',
      'log-shipper',
    ]);
  });

  it("a set's init containers run to completion before the app's containers, and are not compared", () => {
    const warm = makeSnapshot(
      mustParseConfig(
        [
          'sets:',
          '  - name: warmup',
          '    initContainers: [{name: warmup, image: "ghcr.io/acme/warm:1", ports: [{containerPort: 2020}]}]',
        ].join('\n'),
      ),
    );
    const result = injectPod({
      pod: pod({ containers: app([{ containerPort: 2020 }]) }),
      snapshot: warm,
      namespaceName: 'ops',
      namespace,
      nativeSidecarSupported: true,
    });
    expect(result.injected && result.sets).toEqual(['proxy', 'warmup']);
  });

  it('a pod that carries another revision of the set is left as it is, without advice', () => {
    const carried = pod({
      initContainers: [{ name: 'shipper-v0', image: 's:0', ports: [{ containerPort: 2020 }] }],
    });
    carried.metadata = {
      ...carried.metadata,
      labels: { app: 'collector', 'log-shipper.sets.outrigger.dev/revision': '0123456789' },
    };
    const result = inject(carried);
    expect(result.sets).toEqual(['proxy', 'node-agent']);
    expect(result.warnings).toEqual([]);
  });

  it("a set is left out where a set of this pass takes its host port, a pinned revision's among them", () => {
    // A pinned revision of alpha takes host port 9000, which the configuration's check compared
    // with the current alpha (9002) only.
    const sets = (alpha: number, beta: number) =>
      appliedSets(
        mustParseConfig(
          [
            'sets:',
            '  - name: alpha',
            `    containers: [{name: alpha, image: "a", ports: [{containerPort: 80, hostPort: ${alpha}}]}]`,
            '  - name: beta',
            `    containers: [{name: beta, image: "b", ports: [{containerPort: 81, hostPort: ${beta}}]}]`,
          ].join('\n'),
        ),
      );
    const [pinnedAlpha] = sets(9000, 9001);
    const [, beta] = sets(9002, 9000);
    if (!pinnedAlpha || !beta) throw new Error('two sets');
    const { parts, skipped } = matchSets([pinnedAlpha, beta], {
      pod: pod({}),
      namespace: 'assume-enabled',
      owner: { kind: 'DaemonSet', name: 'collector', source: 'stamp' },
      nativeSidecarSupported: true,
    });
    expect(parts.map((p) => p.name)).toEqual(['alpha']);
    expect(skipped.map((k) => k.detail)).toEqual([
      'set beta not added: it would take the host port 9000 of set alpha in this pod; give it names and ports of its own',
    ]);
  });

  it("a set's host port that the app takes as its own host port is left out, on any pod", () => {
    const result = inject(pod({ containers: app([{ containerPort: 80, hostPort: 9000 }]) }));
    expect(result.sets).toEqual(['proxy', 'log-shipper']);
    expect(result.warnings).toEqual([
      "set node-agent not added: the pod already has host port 9000; change the set's port or opt the pod out with node-agent.sets.outrigger.dev/inject=disabled",
    ]);
    // Its container port is a port of the pod's network like any other.
    expect(inject(pod({ containers: app([{ containerPort: 9100 }]) })).warnings).toEqual([
      "set node-agent not added: the pod already has port 9100; change the set's port or opt the pod out with node-agent.sets.outrigger.dev/inject=disabled",
    ]);
    // At any host IP: an address of the node's is also among 0.0.0.0's.
    expect(
      inject(pod({ containers: app([{ containerPort: 80, hostPort: 9000, hostIP: '10.0.0.1' }]) }))
        .sets,
    ).toEqual(['proxy', 'log-shipper']);
  });

  it("in a host-network pod, the app's container ports are host ports: a set that takes one is left out", () => {
    // As written (outrigger inject) and as the API server defaults it (hostPort: containerPort).
    for (const port of [{ containerPort: 9000 }, { containerPort: 9000, hostPort: 9000 }]) {
      const result = inject(pod({ hostNetwork: true, containers: app([port]) }));
      expect(result.proxySkipped).toBe('host-network');
      expect(result.sets).toEqual(['log-shipper']);
      expect(result.warnings).toEqual([
        "set node-agent not added: the pod already has host port 9000; change the set's port or opt the pod out with node-agent.sets.outrigger.dev/inject=disabled",
      ]);
    }
  });

  it('a set whose hostPort is not its containerPort is left out of a host-network pod, which may not have one', () => {
    const result = inject(pod({ hostNetwork: true }));
    expect(result.sets).toEqual(['log-shipper']);
    expect(result.warnings).toEqual([
      "set node-agent not added: its port 9100 has hostPort 9000, and in a host-network pod a port's hostPort must be its containerPort; drop the hostPort from the set, or keep the set off the pod with node-agent.sets.outrigger.dev/inject=disabled",
    ]);
  });

  it("the controller reads a template as the webhook reads its pods: a set the app's port keeps out is not rolled", () => {
    const named = (name: string) => {
      const found = appliedSets(config).find((a) => a.set.name === name);
      if (!found) throw new Error(`no set ${name}`);
      return found;
    };
    const [shipper, agent] = [named('log-shipper'), named('node-agent')];
    const template = pod({ containers: app([{ containerPort: 2020 }]) });
    expect(setSelectsTemplate(shipper, template, namespace, 'DaemonSet')).toBe(
      'the template already has port 2020: the webhook leaves set log-shipper out',
    );
    expect(setSelectsTemplate(agent, template, namespace, 'DaemonSet')).toBeUndefined();
    expect(setSelectsTemplate(agent, pod({ hostNetwork: true }), namespace, 'DaemonSet')).toMatch(
      /^set node-agent's port 9100 has hostPort 9000, and in a host-network pod/,
    );
  });
});
