import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { defaultConfig, makeSnapshot } from '@outrigger/shared';
import { admitPod, admitWorkload, type AdmissionState } from '../src/admit';
import { ConfigStore, RevisionRefresher, type ConfigSource } from '../src/config-source';
import { FlagError, parseFlags } from '../src/flags';
import { jsonLogger } from '@outrigger/kube/without-api';
import { silentLogger } from '../src/log';
import { WebhookMetrics } from '../src/metrics';
import { parseReview } from '../src/review';
import { BodyBudget } from '../src/body';
import { createAdmissionHandler } from '../src/admission-handler';
import { admissionReview } from '@outrigger/testkit';

const state: AdmissionState = {
  snapshot: makeSnapshot(defaultConfig()),
  namespaces: new Map([
    [
      'shop',
      {
        name: 'shop',
        annotations: {
          'outrigger.dev/inject': 'enabled',
          'config.outrigger.dev/proxy-log-level': 'debug',
        },
      },
    ],
    ['plain', { name: 'plain' }],
  ]),
  nativeSidecarSupported: true,
  systemNamespace: 'outrigger-system',
};

describe('admitPod with namespace metadata', () => {
  const pod = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'a' }] } };
  it('applies namespace overrides and marks pods of namespaces that are not opted in', () => {
    const injected = admitPod(parseReview(admissionReview(pod)), state);
    expect(injected.result).toEqual({ outcome: 'injected', reason: 'injected' });
    type C = { env?: { name: string; value?: string }[] };
    const patch = JSON.parse(Buffer.from(injected.response.patch ?? '', 'base64').toString()) as {
      value: C | C[];
    }[];
    const env = patch
      .flatMap((o) => (Array.isArray(o.value) ? o.value : [o.value]))
      .flatMap((c) => c.env ?? []);
    expect(env).toContainEqual({ name: 'OUTRIGGER_LOG_LEVEL', value: 'debug' });
    const skipped = admitPod(parseReview(admissionReview(pod, { namespace: 'plain' })), state);
    expect(skipped.result).toEqual({ outcome: 'skipped', reason: 'namespace-not-enabled' });
    // A namespace the cache has not seen yet: the webhook configuration's selector let it through.
    expect(
      admitPod(parseReview(admissionReview(pod, { namespace: 'brand-new' })), state).result.outcome,
    ).toBe('injected');
  });

  it('does not stamp workloads of namespaces that are not opted in', () => {
    const d = {
      metadata: { name: 'd' },
      spec: { template: { spec: { containers: [{ name: 'a' }] } } },
    };
    const kind = { group: 'apps', version: 'v1', kind: 'Deployment' };
    expect(
      admitWorkload(parseReview(admissionReview(d, { kind, namespace: 'plain' })), state).result
        .reason,
    ).toBe('namespace-not-enabled');
    expect(
      admitWorkload(parseReview(admissionReview(d, { kind, namespace: 'shop' })), state).result
        .outcome,
    ).toBe('stamped');
    expect(
      admitWorkload(parseReview(admissionReview({ ...d, metadata: {} }, { kind })), state).result
        .reason,
    ).toBe('not-handled');
  });
});

describe('--on-error', () => {
  async function answer(
    onError: 'allow' | 'deny',
  ): Promise<{ response: { allowed: boolean; warnings?: string[]; status?: { code: number } } }> {
    const handler = createAdmissionHandler({
      state: () => {
        throw new Error('boom');
      },
      hasSeen: () => true,
      ensureRevision: () => Promise.resolve(),
      metrics: new WebhookMetrics(new Registry()),
      logger: silentLogger(),
      onError,
      maxBodyBytes: 100_000,
      bodyBudget: new BodyBudget(100_000),
    });
    const server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const res = await fetch(`http://127.0.0.1:${port}/mutate/pods`, {
      method: 'POST',
      body: admissionReview({ spec: { containers: [{ name: 'a' }] } }),
    });
    server.close();
    return (await res.json()) as {
      response: { allowed: boolean; warnings?: string[]; status?: { code: number } };
    };
  }

  it('allow: admits unchanged with a warning', async () => {
    const r = await answer('allow');
    expect(r.response.allowed).toBe(true);
    expect(r.response.warnings?.[0]).toMatch(
      /outrigger webhook failed: boom; admitted without the sidecar/,
    );
  });

  it('deny: refuses with a 500 status', async () => {
    const r = await answer('deny');
    expect(r.response).toMatchObject({ allowed: false, status: { code: 500 } });
  });
});

describe('re-reading the configuration for an unseen revision', () => {
  it('refreshes once, rate-limited to once a second, and never for a revision already seen', async () => {
    const metrics = new WebhookMetrics(new Registry());
    const store = new ConfigStore(silentLogger(), metrics);
    store.offer('', 'test');
    let refreshes = 0;
    const source: ConfigSource = {
      start: () => Promise.resolve(),
      stop: () => Promise.resolve(),
      refresh: () => {
        refreshes++;
        store.offer('proxy:\n  logLevel: debug\n', 'test');
        return Promise.resolve();
      },
    };
    let now = 10_000;
    const refresher = new RevisionRefresher({
      hasSeen: (r) => store.hasSeen(r),
      refresh: () => source.refresh(),
      metrics,
      now: () => now,
    });
    const held = store.current?.revision ?? '';
    await refresher.ensure(held);
    await refresher.ensure(undefined);
    expect(refreshes).toBe(0);
    await refresher.ensure('unknown-1');
    await refresher.ensure('unknown-2');
    expect(refreshes).toBe(1);
    now += 1001;
    await refresher.ensure('unknown-3');
    expect(refreshes).toBe(2);
    expect(await metrics.registry.metrics()).toMatch(
      /outrigger_webhook_config_refreshes_total\{result="rate-limited"\} 1/,
    );
  });
});

describe('flags', () => {
  const tls = ['--tls-cert-file', 'c', '--tls-key-file', 'k'];
  it('reads the environment, and the command line wins', () => {
    const f = parseFlags(tls, {
      OUTRIGGER_CONFIG_MAP: 'outrigger-system/outrigger-config',
      OUTRIGGER_ON_ERROR: 'deny',
    });
    expect(f).toMatchObject({
      configMap: { namespace: 'outrigger-system', name: 'outrigger-config' },
      onError: 'deny',
      listen: { host: '', port: 8443 },
    });
    expect(
      parseFlags([...tls, '--on-error', 'allow'], { OUTRIGGER_ON_ERROR: 'deny' }).onError,
    ).toBe('allow');
  });

  it('names the environment variable a bad value came from', () => {
    expect(() => parseFlags(tls, { OUTRIGGER_MAX_BODY_BYTES: '7MiB' })).toThrow(
      '--max-body-bytes (set by OUTRIGGER_MAX_BODY_BYTES) must be an integer',
    );
  });

  it.each([
    [['--listen', ':8443'], /HTTPS only/],
    [[...tls, '--tls-secret', 'a/b'], /not both/],
    [[...tls, '--config-map', 'nope'], /--config-map must be NAMESPACE\/NAME/],
    [[...tls, '--on-error', 'maybe'], /--on-error must be one of allow, deny/],
    [[...tls, '--frobnicate'], /Unknown option '--frobnicate'/],
    // Past Node's longest timer (24.8 days) the delay became 1 ms: the webhook stopped at once.
    [
      [...tls, '--shutdown-delay-seconds', '3000000'],
      /--shutdown-delay-seconds must be an integer from 0 to 3600/,
    ],
  ])('%j is refused: %s', (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(FlagError);
    expect(() => parseFlags(argv)).toThrow(message);
  });
});

describe('configuration store', () => {
  it('swaps in a configuration whose revision is unchanged but whose other settings differ', () => {
    const store = new ConfigStore(silentLogger(), new WebhookMetrics(new Registry()));
    store.offer('', 'test');
    const before = store.current;
    store.offer('excludeNamespaces: [payments]\n', 'test');
    expect(store.current?.revision).toBe(before?.revision);
    expect(store.current?.config.excludeNamespaces).toEqual(['payments']);
  });

  it('logs an unreadable configuration when its reason changes, and counts every time', async () => {
    const lines: { message: string; error?: string }[] = [];
    const logger = jsonLogger({
      level: 'info',
      component: 'test',
      write: (line) => void lines.push(JSON.parse(line) as { message: string; error?: string }),
    });
    const metrics = new WebhookMetrics(new Registry());
    const store = new ConfigStore(logger, metrics);
    for (let i = 0; i < 5; i++) store.unreadable('file f', 'ENOENT f');
    store.unreadable('file f', 'EACCES f');
    expect(lines).toMatchObject([
      { message: 'configuration unreadable; none is in force yet', error: 'ENOENT f' },
      { message: 'configuration unreadable; none is in force yet', error: 'EACCES f' },
    ]);
    const counted = await metrics.registry.getSingleMetricAsString(
      'outrigger_webhook_config_reload_failures_total',
    );
    expect(counted).toContain('outrigger_webhook_config_reload_failures_total{source="file f"} 6');
  });

  it('warns when an emptied configuration puts every default in force', () => {
    // An empty document means the defaults, as documented; a file truncated by an editor, or a
    // key emptied by mistake, dropped excludeNamespaces with an info line alone.
    const lines: { level: string; message: string }[] = [];
    const logger = jsonLogger({
      level: 'info',
      component: 'test',
      write: (line) => void lines.push(JSON.parse(line) as { level: string; message: string }),
    });
    const store = new ConfigStore(logger, new WebhookMetrics(new Registry()));
    store.offer('', 'test');
    expect(lines.filter((l) => l.level === 'warn')).toEqual([]);
    store.offer('excludeNamespaces: [payments]\n', 'test');
    store.offer(' \n', 'test');
    expect(store.current?.config.excludeNamespaces).toEqual([]);
    expect(lines.filter((l) => l.level === 'warn').map((l) => l.message)).toEqual([
      'configuration is empty: every setting takes its default',
    ]);
  });
});

describe('system namespaces', () => {
  it('are never mutated, not even with a skip mark', () => {
    const pod = {
      metadata: { labels: { 'outrigger.dev/inject': 'enabled' } },
      spec: { containers: [{ name: 'a' }] },
    };
    const a = admitPod(parseReview(admissionReview(pod, { namespace: 'kube-system' })), state);
    expect(a.result).toEqual({ outcome: 'skipped', reason: 'system-namespace' });
    expect(a.response.patch).toBeUndefined();
  });
});

describe('metrics', () => {
  it('reports the requests in flight per endpoint as of the scrape', async () => {
    const metrics = new WebhookMetrics(new Registry());
    const line = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => l.startsWith('outrigger_webhook_requests_in_flight{'));
    const pods = metrics.inFlightOf('pods');
    expect(metrics.inFlightOf('pods')).toBe(pods);
    pods.inc();
    pods.inc();
    metrics.inFlightOf('workloads').inc();
    expect(await line()).toEqual([
      'outrigger_webhook_requests_in_flight{endpoint="pods"} 2',
      'outrigger_webhook_requests_in_flight{endpoint="workloads"} 1',
    ]);
    pods.dec();
    pods.dec();
    expect(await line()).toContain('outrigger_webhook_requests_in_flight{endpoint="pods"} 0');
  });

  it('counts every admission across scrapes, beside those counted directly', async () => {
    const metrics = new WebhookMetrics(new Registry());
    const lines = async (): Promise<string[]> =>
      (await metrics.registry.metrics())
        .split('\n')
        .filter((l) => /^outrigger_webhook_admission(s_total|_duration_seconds_count)\{/.test(l));
    const injected = { endpoint: 'pods', outcome: 'injected', reason: 'injected' };
    for (let i = 0; i < 3; i++) metrics.observe(injected, 0.0003);
    metrics.observe({ endpoint: 'workloads', outcome: 'stamped', reason: 'stamped' }, 0.002);
    metrics.admissions.inc({ endpoint: 'pods', outcome: 'invalid', reason: 'malformed' });
    expect(await lines()).toEqual([
      'outrigger_webhook_admissions_total{endpoint="pods",outcome="invalid",reason="malformed"} 1',
      'outrigger_webhook_admissions_total{endpoint="pods",outcome="injected",reason="injected"} 3',
      'outrigger_webhook_admissions_total{endpoint="workloads",outcome="stamped",reason="stamped"} 1',
      'outrigger_webhook_admission_duration_seconds_count{endpoint="pods",outcome="injected"} 3',
      'outrigger_webhook_admission_duration_seconds_count{endpoint="workloads",outcome="stamped"} 1',
    ]);
    // A second scrape adds nothing twice; later admissions add to what was scraped.
    expect(await lines()).toContain(
      'outrigger_webhook_admissions_total{endpoint="pods",outcome="injected",reason="injected"} 3',
    );
    metrics.observe(injected, 0.0003);
    expect(await lines()).toContain(
      'outrigger_webhook_admissions_total{endpoint="pods",outcome="injected",reason="injected"} 4',
    );
  });
});
