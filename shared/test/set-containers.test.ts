// A set's containers and volumes, checked as the API server checks a pod's: a mistake there
// would refuse every pod the set selects, so the configuration refuses it, naming the field;
// and what Kubernetes takes is taken, as written.

import { formatIssue, mustParseConfig, parseConfig } from '../src';

function errorsOf(text: string): string[] {
  const result = parseConfig(text);
  if (result.ok) throw new Error('expected the configuration to be refused');
  return result.errors.map(formatIssue);
}

/** A configuration of one set, `agent`, whose one container has the given YAML lines. */
const oneContainer = (...lines: string[]): string =>
  [
    'sets:',
    '  - name: agent',
    '    containers:',
    '      - name: agent',
    '        image: ghcr.io/acme/agent:1',
    ...lines.map((l) => `        ${l}`),
  ].join('\n');

describe("a set's containers, checked as the API server checks them in a pod", () => {
  it('refuses a typo, a malformed quantity, a request above its limit and a number as an env value', () => {
    expect(
      errorsOf(
        [
          'sets:',
          '  - name: shipper',
          '    containers:',
          '      - name: shipper',
          '        image: ghcr.io/acme/shipper:1',
          '        volumeMount: [{name: logs, mountPath: /logs}]',
          '        imagepullpolicy: Always',
          '        resources: {limits: {cpu: lots, memory: 64Mi}, requests: {memory: 128Mi}}',
          '        env: [{name: PORT, value: 8080}, {name: A=B, value: x}]',
          '        command: /bin/shipper',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[0].containers[0].volumeMount (line 6): is not a field of a Kubernetes container; did you mean volumeMounts?',
      '.sets[0].containers[0].imagepullpolicy (line 7): is not a field of a Kubernetes container; did you mean imagePullPolicy?',
      '.sets[0].containers[0].resources.limits.cpu (line 8): must be a Kubernetes quantity such as 100m, 64Mi or 1; got string "lots"',
      '.sets[0].containers[0].env[0].value (line 9): must be a string (quote numbers and booleans); got number 8080',
      '.sets[0].containers[0].env[1].name (line 9): must be printable characters other than \'=\'; got "A=B"',
      '.sets[0].containers[0].command (line 10): must be a list; got string "/bin/shipper"',
      '.sets[0].containers[0].resources.requests.memory (line 8): must be at most the limit 64Mi (.sets[0].containers[0].resources.limits.memory), or Kubernetes refuses every injected pod; got 128Mi',
    ]);
  });

  it('refuses probes on an init container, bad ports and mounts, and one volume name twice', () => {
    expect(
      errorsOf(
        [
          'sets:',
          '  - name: agent',
          '    initContainers:',
          '      - name: fetch',
          '        image: ghcr.io/acme/fetch:1',
          '        readinessProbe: {tcpSocket: {port: 80}}',
          '    containers:',
          '      - name: agent',
          '        image: ghcr.io/acme/agent:1',
          '        imagePullPolicy: always',
          '        ports: [{containerPort: 80, protocol: tcp, name: metrics}, {hostPort: 9, name: metrics}]',
          '        volumeMounts: [{name: data, mountPath: /d}, {name: data, mountPath: /d}, {mountPath: /e}, {name: outrigger-identity, mountPath: /id}]',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[0].containers[0].imagePullPolicy (line 10): must be one of Always, IfNotPresent, Never; got string "always"',
      '.sets[0].containers[0].ports[0].protocol (line 11): must be one of TCP, UDP, SCTP; got string "tcp"',
      '.sets[0].containers[0].ports[1] (line 11): needs a containerPort: the port the container listens on',
      '.sets[0].containers[0].ports[1].name (line 11): names port metrics twice; rename one',
      '.sets[0].containers[0].volumeMounts[1].mountPath (line 12): mounts /d twice; keep one',
      '.sets[0].containers[0].volumeMounts[2] (line 12): needs a name',
      ".sets[0].containers[0].volumeMounts[3].name (line 12): outrigger-identity is the proxy's own volume, not there when the proxy is not; give the set a volume of its own",
      '.sets[0].initContainers[0].readinessProbe (line 6): is not allowed on an init container, which runs to completion; move the container to .containers to keep it running',
    ]);
    expect(
      errorsOf(
        [
          'sets:',
          '  - name: agent',
          '    containers: [{name: agent, image: "ghcr.io/acme/agent:1"}]',
          '    volumes: [{name: data, emptyDir: {}}, {name: data, emptyDir: {}}]',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[0].volumes[1].name (line 4): set agent adds two volumes named data; rename one',
    ]);
  });

  it('takes every field a Kubernetes container has, as written', () => {
    const [set] = mustParseConfig(
      [
        'sets:',
        '  - name: agent',
        '    containers:',
        '      - name: agent',
        '        image: ghcr.io/acme/agent:1',
        '        command: [/agent]',
        '        args: ["--port", ""]',
        '        workingDir: /work',
        '        env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}, {name: X, value: ""}]',
        '        envFrom: [{configMapRef: {name: agent}}]',
        '        resources: {requests: {cpu: 0.1, memory: 32Mi}, limits: {memory: 64Mi}}',
        '        ports: [{name: metrics, containerPort: 9100, protocol: TCP}]',
        '        volumeMounts: [{name: app-logs, mountPath: /logs, readOnly: true}]',
        '        livenessProbe: {httpGet: {path: /live, port: 9100}}',
        '        lifecycle: {preStop: {sleep: {seconds: 5}}}',
        '        securityContext: {runAsNonRoot: true}',
        '        terminationMessagePolicy: FallbackToLogsOnError',
        '        imagePullPolicy: IfNotPresent',
        '        tty: false',
      ].join('\n'),
    ).sets;
    expect(set?.containers[0]?.resources).toEqual({
      requests: { cpu: 0.1, memory: '32Mi' },
      limits: { memory: '64Mi' },
    });
  });
});

describe('what a careless or hostile configuration cannot slip past', () => {
  it("refuses keys named like an object's own methods, and null entries, naming them", () => {
    for (const key of ['valueOf', 'hasOwnProperty', '__proto__', 'toString', 'constructor'])
      expect(errorsOf(oneContainer(`${JSON.stringify(key)}: 1`))).toEqual([
        expect.stringMatching(
          new RegExp(
            `^\\.sets\\[0\\]\\.containers\\[0\\]\\.${key} \\(line 6\\): is not a field of a Kubernetes container`,
          ),
        ),
      ]);
    expect(errorsOf(oneContainer('ports: [null]', 'volumeMounts: [null]'))).toEqual([
      '.sets[0].containers[0].ports[0] (line 6): must be a port (a mapping); got null',
      '.sets[0].containers[0].volumeMounts[0] (line 7): must be a volume mount (a mapping); got null',
    ]);
    expect(errorsOf('sets: [null]\n')).toEqual([
      '.sets[0] (line 1): must be a set (a mapping with a name); got null',
    ]);
  });

  it('refuses what the API server would refuse in every pod: sources, valueFrom, paths, probes, resources', () => {
    expect(
      errorsOf(
        [
          oneContainer(
            'env: [{name: A, valueFrom: {}}]',
            'volumeMounts: [{name: v, mountPath: /v, subPath: /etc}, {name: w, mountPath: /w, subPath: a, subPathExpr: b}, {name: x, mountPath: /x, recursiveReadOnly: Enabled}, {name: y, mountPath: /y, mountPropagation: Bidirectional}]',
            'livenessProbe: {exec: {command: ["true"]}, successThreshold: 2}',
            'readinessProbe: {httpGet: {path: /ready}, periodSeconds: "10"}',
            'startupProbe: {exec: null}',
            'lifecycle: {postStart: {}}',
            'resources: {limits: {gpu: 1, example.com/dev: 2}, requests: {example.com/dev: 1, vendor.io/card: 1}}',
          ),
          '    volumes: [{name: v, emptydir: {}}, {name: w, emptyDir: null}, {name: x, emptyDir: {}, configMap: {name: c}}]',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[0].containers[0].env[0].valueFrom (line 6): must have exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef; got 0',
      '.sets[0].containers[0].volumeMounts[0].subPath (line 7): must be a path inside the volume (relative, no ".."); got "/etc"',
      '.sets[0].containers[0].volumeMounts[1] (line 7): has both subPath and subPathExpr; keep one',
      '.sets[0].containers[0].volumeMounts[2].recursiveReadOnly (line 7): Enabled needs readOnly: true',
      '.sets[0].containers[0].livenessProbe.successThreshold (line 8): must be 1 for a liveness probe; got number 2',
      '.sets[0].containers[0].readinessProbe.httpGet (line 9): needs a port',
      '.sets[0].containers[0].readinessProbe.periodSeconds (line 9): must be an integer from 0 to 2147483647; got string "10"',
      '.sets[0].containers[0].startupProbe (line 10): must have exactly one of exec, httpGet, tcpSocket, grpc; got 0',
      '.sets[0].containers[0].lifecycle.postStart (line 11): must have exactly one of exec, httpGet, tcpSocket, sleep; got 0',
      '.sets[0].containers[0].volumeMounts[3].mountPropagation (line 7): Bidirectional needs a privileged container (securityContext.privileged: true)',
      '.sets[0].containers[0].resources.requests["example.com/dev"] (line 12): is an extended resource: its request must equal its limit',
      '.sets[0].containers[0].resources.requests["vendor.io/card"] (line 12): is an extended resource: give it a limit equal to the request',
      '.sets[0].containers[0].resources.limits.gpu (line 12): is not a resource a container can ask for: cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource named with its domain (example.com/device)',
      '.sets[0].volumes[0].emptydir (line 13): is not a kind of volume source; emptyDir, configMap, secret and projected are the common ones',
      '.sets[0].volumes[1].emptyDir (line 13): must be a mapping (emptyDir: {} for the defaults); got null',
      '.sets[0].volumes[2] (line 13): must have one source; got emptyDir and configMap',
    ]);
  });

  it('takes what Kubernetes takes: one port over two protocols, null fields on init containers, a null handler beside a real one', () => {
    const config = mustParseConfig(
      [
        'sets:',
        '  - name: dns',
        '    initContainers: [{name: warm, image: "ghcr.io/acme/dns:1", ports: [{containerPort: 53}], lifecycle: null, livenessProbe: null}]',
        '    containers:',
        '      - name: dns',
        '        image: ghcr.io/acme/dns:1',
        '        ports: [{containerPort: 53, protocol: UDP, name: dns}, {containerPort: 53, protocol: TCP, name: dns-tcp}, {containerPort: 4143, protocol: UDP, name: alt}]',
        '        readinessProbe: {exec: null, tcpSocket: {port: dns-tcp}}',
        '  - name: relay',
        '    containers: [{name: relay, image: "ghcr.io/acme/relay:1", ports: [{containerPort: 80, hostPort: 53, protocol: TCP}]}]',
        '  - name: relay-udp',
        '    containers: [{name: relay-udp, image: "ghcr.io/acme/relay:1", ports: [{containerPort: 81, hostPort: 53, protocol: UDP}]}]',
      ].join('\n'),
    );
    expect(config.sets.map((s) => s.name)).toEqual(['dns', 'relay', 'relay-udp']);
  });

  it('refuses a set that mounts a volume another set adds, where the two can meet', () => {
    expect(
      errorsOf(
        [
          'sets:',
          '  - {name: a, containers: [{name: ca, image: "ghcr.io/a/b:1"}], volumes: [{name: shared, emptyDir: {}}]}',
          '  - {name: b, containers: [{name: cb, image: "ghcr.io/a/b:1", volumeMounts: [{name: shared, mountPath: /s}]}]}',
        ].join('\n'),
      ),
    ).toEqual([
      '.sets[1].containers[0].volumeMounts[0].name (line 3): set b mounts volume shared, which set a adds (.sets[0].volumes[0].name), and the two can select the same pod: a pod without a would have no such volume; add the same volume to b to share it',
    ]);
  });
});
