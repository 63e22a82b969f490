import {
  DEFAULT_CONFIG_YAML,
  configRevision,
  defaultConfig,
  formatIssue,
  mustParseConfig,
  parseConfig,
} from '../src';

describe('configuration', () => {
  it('the shipped default YAML validates and equals the parser defaults', () => {
    const parsed = parseConfig(DEFAULT_CONFIG_YAML);
    expect(parsed).toEqual({ ok: true, config: defaultConfig() });
    expect(parseConfig('')).toEqual({ ok: true, config: defaultConfig() });
  });

  it('fills defaults for the fields a document leaves out', () => {
    const config = mustParseConfig(
      'proxy:\n  image: ghcr.io/outrigger/proxy:2.0.0\nrollout:\n  maxConcurrent: 2\n',
    );
    expect(config.proxy.image).toBe('ghcr.io/outrigger/proxy:2.0.0');
    expect(config.proxy.ports).toEqual({ inbound: 4143, outbound: 4140, admin: 4191 });
    expect(config.rollout).toMatchObject({ maxConcurrent: 2, mode: 'auto' });
    expect(config.init.enabled).toBe(true);
  });

  it('reports every error with its YAML path, line and what is allowed', () => {
    const text = [
      'proxy:',
      '  imagePullPolicy: Sometimes',
      '  ports:',
      '    admin: 99999',
      '  resources:',
      '    limits:',
      '      cpu: lots',
      '  env:',
      '    - name: A',
      '      value: 1',
      '  imagee: typo',
      'nativeSidecar: maybe',
      'overrides:',
      '  allowed: [proxy-cpu-request, everything]',
      'rollout:',
      '  mode: yolo',
      '  maxConcurrent: 0',
    ].join('\n');
    const result = parseConfig(text);
    if (result.ok) throw new Error('expected errors');
    const lines = result.errors.map(formatIssue);
    expect(lines).toEqual([
      '.proxy.imagee (line 11): unknown field; allowed here: name, image, imagePullPolicy, ports, uid, args, env, logLevel, resources, readinessProbe, livenessProbe, startupProbe, securityContext',
      '.proxy.imagePullPolicy (line 2): must be one of Always, IfNotPresent, Never; got string "Sometimes"',
      '.proxy.ports.admin (line 4): must be an integer from 1 to 65535; got number 99999',
      '.proxy.env[0].value (line 10): must be a string (quote numbers and booleans); got number 1',
      '.proxy.resources.limits.cpu (line 7): must be a Kubernetes quantity such as 100m, 64Mi or 1; got string "lots"',
      '.nativeSidecar (line 12): must be one of auto, true, false; got string "maybe"',
      '.overrides.allowed[1] (line 14): must be one of proxy-cpu-request, proxy-cpu-limit, proxy-memory-request, proxy-memory-limit, proxy-log-level, proxy-image, skip-inbound-ports, skip-outbound-ports, native-sidecar, init-container; got string "everything"',
      '.rollout.mode (line 16): must be one of auto, manual, dry-run; got string "yolo"',
      '.rollout.maxConcurrent (line 17): must be an integer from 1 to 1000; got number 0',
    ]);
  });

  it('rejects YAML that does not parse, with the line', () => {
    const result = parseConfig('proxy:\n  uid: 1\nrollout:\n  mode: auto\n  mode: manual\n');
    expect(result).toMatchObject({
      ok: false,
      errors: [
        {
          path: '.',
          line: 5,
          message: expect.stringMatching(/not valid YAML: Map keys must be unique/),
        },
      ],
    });
  });

  it('refuses an alias to no anchor and an alias bomb as not valid YAML, never throwing', () => {
    // Each of these threw out of parseConfig, and a webhook reloading its file ended.
    expect(parseConfig('proxy:\n  args: [*nope]\n')).toMatchObject({
      ok: false,
      errors: [
        { path: '.', message: expect.stringMatching(/not valid YAML: .*alias.*\*nope.*&nope/) },
      ],
    });
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]',
      'c: [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b, *b]',
    ].join('\n');
    expect(parseConfig(bomb)).toMatchObject({
      ok: false,
      errors: [{ path: '.', message: expect.stringMatching(/not valid YAML: .*alias/i) }],
    });
    const deep = `proxy:\n  securityContext: ${'['.repeat(20_000)}${']'.repeat(20_000)}\n`;
    expect(parseConfig(deep)).toMatchObject({ ok: false, errors: [{ path: '.' }] });
  });

  it('refuses a request above its limit, which would make every injected pod invalid', () => {
    const result = parseConfig(
      [
        'proxy:',
        '  resources:',
        '    requests: {memory: 512Mi, cpu: 100m}',
        '    limits: {memory: 256Mi, cpu: "0.1"}',
        'init:',
        '  resources:',
        '    requests: {cpu: "2"}',
        '    limits: {cpu: 1500m}',
      ].join('\n'),
    );
    expect(result.ok ? [] : result.errors.map(formatIssue)).toEqual([
      '.proxy.resources.requests.memory (line 3): must be at most the limit 256Mi (.proxy.resources.limits.memory), or Kubernetes refuses every injected pod; got 512Mi',
      '.init.resources.requests.cpu (line 7): must be at most the limit 1500m (.init.resources.limits.cpu), or Kubernetes refuses every injected pod; got 2',
    ]);
  });

  it('refuses a tagged value that is not plain data, naming where it is', () => {
    // A !!binary securityContext passed as a mapping and reached pods as {type: Buffer, ...}.
    for (const [text, path] of [
      ['proxy:\n  securityContext: !!binary aGVsbG8=\n', '.proxy.securityContext'],
      ['proxy:\n  args: !!set {a, b}\n', '.proxy.args'],
      [
        'init:\n  securityContext:\n    capabilities: !!omap [{a: 1}]\n',
        '.init.securityContext.capabilities',
      ],
    ] as const)
      expect(parseConfig(text)).toMatchObject({
        ok: false,
        errors: [
          {
            path: '.',
            message: expect.stringMatching(
              new RegExp(`not valid YAML: ${path.replace(/\./g, '\\.')} is a tagged value`),
            ),
          },
        ],
      });
  });

  it('answers every malformed section with errors, never a throw', () => {
    // Checks across fields read sections that had failed to read, and a self-referencing
    // anchor made a cycle that the check for tagged values followed for ever.
    for (const text of [
      'proxy: 1\n',
      'init: []\n',
      'proxy: {ports: 1}\n',
      'proxy:\n  resources: 1\n',
      'init:\n  resources: []\n',
      'a: &x [ *x ]\n',
      '&x { a: *x }\n',
      'proxy:\n  securityContext: &x {a: *x}\n',
      `proxy:\n  args: ${'['.repeat(3000)}${']'.repeat(3000)}\n`,
    ])
      expect(parseConfig(text)).toMatchObject({ ok: false });
    // Brackets inside a quoted string are not nesting.
    expect(parseConfig(`proxy:\n  args: ["${'['.repeat(100)}", '{{']\n`)).toMatchObject({
      ok: true,
    });
    expect(parseConfig('proxy:\n  securityContext: &x {a: *x}\n')).toMatchObject({
      errors: [{ message: expect.stringMatching(/refers to itself/) }],
    });
  });

  it('refuses a configuration over 128 KiB before parsing it, saying so', () => {
    const keys = Array.from({ length: 9000 }, (_, i) => `    k${i}: ${i}`).join('\n');
    const result = parseConfig(`proxy:\n  securityContext:\n${keys}\n`);
    expect(result).toMatchObject({
      ok: false,
      errors: [
        {
          path: '.',
          message: expect.stringMatching(/bytes; a configuration may have at most 131072/),
        },
      ],
    });
  });

  it('finds a repeated key among thousands, with its line', () => {
    const keys = Array.from({ length: 3000 }, (_, i) => `    k${i}: ${i}`);
    keys.push('    k17: again');
    const result = parseConfig(`proxy:\n  securityContext:\n${keys.join('\n')}\n`);
    expect(result).toMatchObject({
      ok: false,
      errors: [
        {
          path: '.',
          line: 3003,
          message: expect.stringMatching(/Map keys must be unique; "k17" appears twice/),
        },
      ],
    });
  });

  it('rejects a document that is not a mapping, and cross-field conflicts', () => {
    expect(parseConfig('- a\n- b\n')).toMatchObject({
      ok: false,
      errors: [{ path: '.', message: expect.stringMatching(/must be a mapping/) }],
    });
    const clash = parseConfig('proxy:\n  name: same\ninit:\n  name: same\n  \n');
    expect(clash).toMatchObject({
      ok: false,
      errors: [{ path: '.init.name', message: expect.stringMatching(/must differ/) }],
    });
    const ports = parseConfig('proxy:\n  ports:\n    inbound: 4191\n');
    expect(ports).toMatchObject({
      ok: false,
      errors: [{ path: '.proxy.ports', message: expect.stringMatching(/three different ports/) }],
    });
  });

  it('derives the default probes from the admin port, and accepts upper-case image tags', () => {
    const config = mustParseConfig(
      'proxy:\n  image: ghcr.io/outrigger/proxy:1.0.0-RC1\n  ports:\n    admin: 9901\n',
    );
    expect(config.proxy.readinessProbe).toMatchObject({ httpGet: { path: '/ready', port: 9901 } });
    expect(config.proxy.livenessProbe).toMatchObject({ httpGet: { path: '/live', port: 9901 } });
    expect(parseConfig('proxy:\n  image: Not/An/Image\n')).toMatchObject({
      ok: false,
      errors: [{ path: '.proxy.image' }],
    });
  });

  it('accepts YAML booleans for nativeSidecar', () => {
    expect(mustParseConfig('nativeSidecar: false').nativeSidecar).toBe('false');
    expect(mustParseConfig('nativeSidecar: true').nativeSidecar).toBe('true');
  });

  it('mustParseConfig throws a ConfigError that lists every problem', () => {
    expect(() =>
      mustParseConfig('rollout:\n  mode: x\n  maxConcurrent: -1\n', 'cm/outrigger-config'),
    ).toThrow(
      /invalid cm\/outrigger-config:\n {2}\.rollout\.mode \(line 2\).*\n {2}\.rollout\.maxConcurrent \(line 3\)/,
    );
  });
});

describe('revision', () => {
  it('is stable, short, and independent of key order and formatting', () => {
    const a = mustParseConfig('proxy:\n  logLevel: debug\n  uid: 1000\n');
    const b = mustParseConfig('proxy: {uid: 1000, logLevel: debug}');
    expect(configRevision(a)).toBe(configRevision(b));
    expect(configRevision(a)).toMatch(/^[0-9a-f]{10}$/);
  });

  it('changes with the injection-relevant part only', () => {
    const base = configRevision(defaultConfig());
    expect(configRevision(mustParseConfig('proxy:\n  image: ghcr.io/outrigger/proxy:9'))).not.toBe(
      base,
    );
    expect(configRevision(mustParseConfig('init:\n  enabled: false'))).not.toBe(base);
    expect(configRevision(mustParseConfig('rollout:\n  maxConcurrent: 1\n  mode: manual'))).toBe(
      base,
    );
    expect(configRevision(mustParseConfig('excludeNamespaces: [legacy]'))).toBe(base);
  });
});
