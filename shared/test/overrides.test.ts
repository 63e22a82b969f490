import {
  compareQuantities,
  defaultConfig,
  mustParseConfig,
  proxyResources,
  quantityValue,
  resolveOverrides,
} from '../src';

const config = defaultConfig();
const resolve = (pod: Record<string, string>, ns: Record<string, string> = {}, c = config) =>
  resolveOverrides({
    podAnnotations: pod,
    namespaceAnnotations: ns,
    namespaceName: 'shop',
    config: c,
    podDescription: 'Pod web',
  });

describe('overrides', () => {
  it('reads every setting', () => {
    const r = resolve({
      'config.outrigger.dev/proxy-cpu-request': '250m',
      'config.outrigger.dev/proxy-memory-limit': '1Gi',
      'config.outrigger.dev/proxy-log-level': 'debug',
      'config.outrigger.dev/proxy-image': 'ghcr.io/outrigger/proxy:2',
      'config.outrigger.dev/skip-inbound-ports': '80, 9000-9100',
      'config.outrigger.dev/native-sidecar': 'false',
      'config.outrigger.dev/init-container': 'disabled',
      'unrelated.io/x': 'y',
    });
    expect(r).toEqual({
      values: {
        'proxy-cpu-request': '250m',
        'proxy-memory-limit': '1Gi',
        'proxy-log-level': 'debug',
        'proxy-image': 'ghcr.io/outrigger/proxy:2',
        'skip-inbound-ports': ['80', '9000-9100'],
        'native-sidecar': false,
        'init-container': false,
      },
      warnings: [],
    });
  });

  it('lets the pod win over its namespace', () => {
    const r = resolve(
      { 'config.outrigger.dev/proxy-log-level': 'warn' },
      {
        'config.outrigger.dev/proxy-log-level': 'debug',
        'config.outrigger.dev/proxy-cpu-limit': '2',
      },
    );
    expect(r.values).toEqual({ 'proxy-log-level': 'warn', 'proxy-cpu-limit': '2' });
  });

  it('turns bad values into warnings that name the object, annotation, value and fix', () => {
    const r = resolve(
      { 'config.outrigger.dev/proxy-memory-limit': 'huge', 'config.outrigger.dev/typo': '1' },
      { 'config.outrigger.dev/skip-outbound-ports': '0' },
    );
    expect(r.values).toEqual({});
    expect(r.warnings).toEqual([
      'Namespace shop: annotation config.outrigger.dev/skip-outbound-ports="0" ignored: not a comma-separated list of ports or ranges such as 8080,9000-9100 (bad: 0)',
      'Pod web: annotation config.outrigger.dev/proxy-memory-limit="huge" ignored: not a Kubernetes quantity; use a value such as 100m, 64Mi or 1',
      expect.stringMatching(
        /^Pod web: annotation config.outrigger.dev\/typo="1" ignored: unknown setting; known settings: proxy-cpu-request/,
      ),
    ]);
  });

  it('refuses settings the configuration does not allow, and images from other registries', () => {
    const locked = mustParseConfig(
      'overrides:\n  allowed: [proxy-image]\n  allowedRegistries: [registry.corp/]',
    );
    const r = resolve(
      {
        'config.outrigger.dev/proxy-log-level': 'debug',
        'config.outrigger.dev/proxy-image': 'ghcr.io/outrigger/proxy:2',
      },
      {},
      locked,
    );
    expect(r.values).toEqual({});
    expect(r.warnings).toEqual([
      'Pod web: annotation config.outrigger.dev/proxy-log-level="debug" ignored: the configuration does not allow this override (overrides.allowed); ask the cluster admin',
      'Pod web: annotation config.outrigger.dev/proxy-image="ghcr.io/outrigger/proxy:2" ignored: the registry is not allowed; the configuration (overrides.allowedRegistries) allows registry.corp/',
    ]);
  });
});

describe('resource overrides against limits', () => {
  it('drops an override that would put a request above its limit, with a warning', () => {
    const values = resolve({
      'config.outrigger.dev/proxy-memory-request': '512Mi',
      'config.outrigger.dev/proxy-cpu-limit': '2',
    }).values;
    const { resources, warnings } = proxyResources(config, values);
    expect(resources).toEqual({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { memory: '256Mi', cpu: '2' },
    });
    expect(warnings).toEqual([
      'memory request 512Mi would exceed the limit 256Mi; the proxy keeps the configured memory resources (set both the request and the limit overrides)',
    ]);
    const both = resolve({
      'config.outrigger.dev/proxy-memory-request': '512Mi',
      'config.outrigger.dev/proxy-memory-limit': '1Gi',
    }).values;
    expect(proxyResources(config, both)).toEqual({
      resources: { requests: { cpu: '100m', memory: '512Mi' }, limits: { memory: '1Gi' } },
      warnings: [],
    });
  });

  it('gives pods without resource overrides the configured resources, the same for each', () => {
    const first = proxyResources(config, {});
    expect(first).toEqual({
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
      warnings: [],
    });
    // Kept once per configuration: shared, so frozen; the warnings are each caller's own.
    expect(proxyResources(config, { 'proxy-log-level': 'debug' }).resources).toBe(first.resources);
    expect(Object.isFrozen(first.resources.requests)).toBe(true);
    // A configuration refuses requests above limits (config.test.ts); made here without it.
    const inverted = {
      ...config,
      proxy: {
        ...config.proxy,
        resources: { requests: { memory: '1Gi' }, limits: { memory: '256Mi' } },
      },
    };
    const warned = proxyResources(inverted, {});
    warned.warnings.push('changed by the caller');
    expect(proxyResources(inverted, {}).warnings).toEqual([
      'memory request 1Gi would exceed the limit 256Mi; the proxy keeps the configured memory resources (set both the request and the limit overrides)',
    ]);
  });

  it('compares quantities exactly, not in floating point', () => {
    // 0.7 * 1000 is not 700 in floating point: the override 700m against a limit of 0.7 was
    // dropped as exceeding it, and so were 564 of the 4,000 whole millicores from 1m to 4000m.
    for (const [a, b] of [
      ['700m', '0.7'],
      ['2300m', '2.3'],
      ['1001M', '1.001G'],
      ['1.5Gi', '1536Mi'],
      ['2e3', '2k'],
    ] as const)
      expect(compareQuantities(a, b)).toBe(0);
    for (let m = 1; m <= 4000; m++) expect(compareQuantities(`${m}m`, String(m / 1000))).toBe(0);
    expect(compareQuantities('1G', '1Gi')).toBe(-1);
    // E is exa (10^18) and Ei 2^60, not an exponent: 1Ei threw, 2E was read as 2.
    expect(compareQuantities('1Ei', '1024Pi')).toBe(0);
    expect(compareQuantities('2E', '1Gi')).toBe(1);
    expect(compareQuantities('1E3', '1k')).toBe(0);
    expect(quantityValue('1Ei')).toBe(2 ** 60);
    expect(quantityValue('2E')).toBe(2e18);
    expect(compareQuantities('101m', '0.1')).toBe(1);
    expect(compareQuantities('1e300', '1')).toBe(1);
    expect(compareQuantities('lots', '1')).toBeNaN();
    const config = mustParseConfig('proxy:\n  resources:\n    limits: {cpu: "0.7"}');
    expect(proxyResources(config, { 'proxy-cpu-request': '700m' })).toEqual({
      resources: { requests: { cpu: '700m' }, limits: { cpu: '0.7' } },
      warnings: [],
    });
  });

  it('compares quantities by value', () => {
    expect(quantityValue('1Gi')).toBe(2 ** 30);
    expect(quantityValue('1500m')).toBe(1.5);
    expect(quantityValue('2e3')).toBe(2000);
    expect(quantityValue('1G')).toBeLessThan(quantityValue('1Gi'));
    expect(quantityValue('lots')).toBeNaN();
  });
});

describe('image overrides', () => {
  const locked = mustParseConfig('overrides:\n  allowedRegistries: [ghcr.io/org]');
  it('match registries on whole path segments and accept upper-case tags', () => {
    expect(
      resolve({ 'config.outrigger.dev/proxy-image': 'ghcr.io/org/proxy:1.0.0-RC1' }, {}, locked)
        .values,
    ).toEqual({
      'proxy-image': 'ghcr.io/org/proxy:1.0.0-RC1',
    });
    expect(
      resolve({ 'config.outrigger.dev/proxy-image': 'ghcr.io/org-evil/proxy:1' }, {}, locked)
        .warnings,
    ).toHaveLength(1);
    expect(
      resolve({ 'config.outrigger.dev/proxy-image': 'ghcr.io/org/Proxy:1' }, {}, locked)
        .warnings[0],
    ).toMatch(/not an image reference/);
  });
});
