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

  it("a set that declares a port of the app's is left out, with a warning naming the port", () => {
    const result = inject(pod({ containers: app([{ containerPort: 2020 }]) }));
    expect(result.sets).toEqual(['proxy', 'node-agent']);
    expect(result.warnings).toEqual([
      "set log-shipper not added: the pod already has port 2020; change the set's port or opt the pod out with log-shipper.sets.outrigger.dev/inject=disabled",
    ]);
  });

  it("a port of the app's init container counts, and the same number under another protocol does not", () => {
    const result = inject(
      pod({
        initContainers: [{ name: 'warm', image: 'w', ports: [{ containerPort: 53 }] }],
        containers: app([{ containerPort: 2020, protocol: 'UDP' }]),
      }),
    );
    // The agent takes 53/UDP, the init container 53/TCP; the shipper 2020/TCP, the app 2020/UDP.
    expect(result.sets).toEqual(['proxy', 'log-shipper', 'node-agent']);
    expect(
      inject(
        pod({
          initContainers: [
            { name: 'dns', image: 'd', ports: [{ containerPort: 53, protocol: 'UDP' }] },
          ],
        }),
      ).sets,
    ).toEqual(['proxy', 'log-shipper']);
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
    // Another host IP is another host port.
    expect(
      inject(pod({ containers: app([{ containerPort: 80, hostPort: 9000, hostIP: '10.0.0.1' }]) }))
        .sets,
    ).toEqual(['proxy', 'log-shipper', 'node-agent']);
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
