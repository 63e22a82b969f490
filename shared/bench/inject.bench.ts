// `make bench-inject`: the time injectPod takes (plus serializing its patch, which the webhook
// must do) for a small, a typical and a huge pod, each beside JSON.parse + JSON.stringify of
// the same pod measured in the same run, so the ratio holds on any machine, noisy or not.

import { CORPUS_DIR, corpusPods, median, sidecarSetsYaml } from '@outrigger/testkit';
import { BATCH_MS, calibrate, sinkValue, timeBatch, type Op } from './timing';
import {
  DEFAULT_CONFIG_YAML,
  TEMPLATE_PATHS,
  injectPod,
  makeSnapshot,
  serializePatch,
  mustParseConfig,
  type Container,
  type ConfigSnapshot,
  type EnvVar,
  type PodLike,
} from '../src';

const TARGET_RATIO = 2;
const ROUNDS = 21;

const snapshot: ConfigSnapshot = (() => {
  const config = mustParseConfig(DEFAULT_CONFIG_YAML, 'default configuration');
  return makeSnapshot(config);
})();

interface Case {
  label: string;
  source: string;
  pod: PodLike;
  /** The pod as the webhook receives it: JSON text. */
  json: string;
}

// --- the pods -------------------------------------------------------------------------------

function onePod(): PodLike {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'shop', labels: { app: 'web' } },
    spec: {
      containers: [
        {
          name: 'web',
          image: 'nginx:1.27',
          ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
        },
      ],
    },
  };
}

// prettier-ignore
const SERVICES = [
  'orders', 'payments', 'inventory', 'catalog', 'cart', 'checkout', 'shipping', 'pricing',
  'search', 'reviews', 'accounts', 'auth', 'notifications', 'email', 'sms', 'ledger',
  'invoices', 'refunds', 'fraud', 'recommendations', 'media', 'thumbnails', 'audit', 'reports',
  'loyalty', 'coupons', 'tax', 'currency', 'warehouse', 'returns',
];

// prettier-ignore
const SETTINGS = [
  'DB_HOST', 'DB_PORT', 'DB_NAME', 'DB_USER', 'DB_POOL_SIZE', 'DB_TIMEOUT_MS', 'REDIS_URL',
  'REDIS_TTL_SECONDS', 'KAFKA_BROKERS', 'KAFKA_TOPIC', 'KAFKA_GROUP_ID', 'HTTP_PORT',
  'GRPC_PORT', 'LOG_LEVEL', 'LOG_FORMAT', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_SERVICE_NAME',
  'FEATURE_FLAGS', 'RETRY_MAX_ATTEMPTS', 'RETRY_BACKOFF', 'CACHE_ENABLED', 'JAVA_OPTS',
  'UPSTREAM_URL', 'RATE_LIMIT_RPS', 'REGION',
];

/** Setting `key` of service `svc`: a tenth from Secrets, a tenth from ConfigMaps. */
function envVar(svc: string, key: string, i: number): EnvVar {
  const name = `${svc.toUpperCase()}_${key}${i >= SETTINGS.length ? '_FALLBACK' : ''}`;
  if (i % 10 === 3)
    return {
      name,
      valueFrom: { secretKeyRef: { name: `${svc}-secrets`, key: key.toLowerCase() } },
    };
  if (i % 10 === 7)
    return {
      name,
      valueFrom: { configMapKeyRef: { name: `${svc}-config`, key: key.toLowerCase() } },
    };
  const values: Record<string, string> = {
    DB_HOST: `${svc}-db.shop.svc.cluster.local`,
    DB_PORT: '5432',
    DB_NAME: svc,
    DB_USER: `${svc}_app`,
    KAFKA_TOPIC: `${svc}.events.v1`,
    KAFKA_GROUP_ID: `${svc}-consumer`,
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    OTEL_SERVICE_NAME: svc,
    CACHE_ENABLED: 'true',
    RETRY_BACKOFF: 'exponential',
    REGION: 'eu-west-1',
    REDIS_URL: `redis://${svc}-cache.shop.svc.cluster.local:6379/0`,
    KAFKA_BROKERS: 'kafka-0.kafka:9092,kafka-1.kafka:9092,kafka-2.kafka:9092',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4317',
    FEATURE_FLAGS: JSON.stringify({ newCheckout: true, darkLaunch: ['eu-west-1'], percent: 25 }),
    JAVA_OPTS: '-XX:MaxRAMPercentage=75.0 -XX:+UseG1GC -Dfile.encoding=UTF-8',
    UPSTREAM_URL: `https://api.internal.example.com/v2/${svc}`,
  };
  // The rest are ports, sizes, timeouts and rates.
  return { name, value: values[key] ?? String(1000 + ((i * 37) % 9000)) };
}

function bigContainer(svc: string, index: number, envPerContainer: number): Container {
  return {
    name: svc,
    image: `registry.example.com/shop/${svc}:2.14.${index}`,
    imagePullPolicy: 'IfNotPresent',
    args: ['--config=/etc/app/config.yaml', `--port=${8000 + index}`],
    ports: [{ name: 'http', containerPort: 8000 + index, protocol: 'TCP' }],
    env: Array.from({ length: envPerContainer }, (_, i) =>
      envVar(svc, SETTINGS[i % SETTINGS.length] ?? 'X', i),
    ),
    resources: { requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } },
    readinessProbe: { httpGet: { path: '/healthz', port: 8000 + index }, periodSeconds: 5 },
    volumeMounts: [{ name: 'config', mountPath: '/etc/app', readOnly: true }],
  };
}

/** 30 containers, 1,500 environment variables between them, owned by a Deployment's ReplicaSet. */
function hugePod(): PodLike {
  const envPerContainer = 1500 / SERVICES.length;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'monolith-7d9f8c6b5-x2x7q',
      namespace: 'shop',
      labels: { app: 'monolith', 'pod-template-hash': '7d9f8c6b5' },
      annotations: { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9090' },
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'monolith-7d9f8c6b5', controller: true },
      ],
    },
    spec: {
      containers: SERVICES.map((svc, i) => bigContainer(svc, i, envPerContainer)),
      volumes: [{ name: 'config', configMap: { name: 'monolith-config' } }],
    },
  };
}

function injects(pod: PodLike): boolean {
  return injectPod({
    pod,
    snapshot,
    namespaceName: 'bench',
    namespace: 'assume-enabled',
    nativeSidecarSupported: true,
  }).injected;
}

/** The corpus pod of median length among those injection does not skip (Lists included). */
function medianCorpusPod(): Case {
  const pods = corpusPods(TEMPLATE_PATHS)
    .map(({ file, pod }) => caseOf('median corpus pod', file, pod as PodLike))
    .filter((c) => injects(c.pod))
    .sort((a, b) => a.json.length - b.json.length);
  // The lower middle one of an even count: a pod of the corpus, not an average of two.
  const middle = pods[Math.floor((pods.length - 1) / 2)];
  if (middle === undefined) throw new Error(`no injectable pod found in ${CORPUS_DIR}`);
  return { ...middle, source: `${middle.source}, median of ${pods.length}` };
}

function caseOf(label: string, source: string, pod: PodLike): Case {
  return { label, source, pod, json: JSON.stringify(pod) };
}

interface Result {
  c: Case;
  inject: number;
  baseline: number;
  /** Length of the serialized patch: what injection has to write, beside the pod it read. */
  patchLength: number;
  /** Median of the per-round ratios: each round times both operations back to back. */
  ratio: number;
}

function bench(c: Case): Result {
  const inject: Op = () => {
    const r = injectPod({
      pod: c.pod,
      snapshot,
      namespaceName: 'bench',
      namespace: 'assume-enabled',
      nativeSidecarSupported: true,
    });
    if (!r.injected) throw new Error(`${c.label} was skipped (${r.reason})`);
    return serializePatch(r.patch).length;
  };
  const baseline: Op = () => JSON.stringify(JSON.parse(c.json) as unknown).length;
  const patchLength = inject();
  const n = { inject: calibrate(inject), baseline: calibrate(baseline) };
  const rounds: { inject: number; baseline: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate the order, so neither operation always runs first after a pause.
    if (round % 2 === 0)
      rounds.push({
        inject: timeBatch(inject, n.inject),
        baseline: timeBatch(baseline, n.baseline),
      });
    else
      rounds.push({
        baseline: timeBatch(baseline, n.baseline),
        inject: timeBatch(inject, n.inject),
      });
  }
  if (JSON.stringify(c.pod) !== c.json) throw new Error(`injectPod changed its input (${c.label})`);
  return {
    c,
    patchLength,
    inject: median(rounds.map((r) => r.inject)),
    baseline: median(rounds.map((r) => r.baseline)),
    ratio: median(rounds.map((r) => r.inject / r.baseline)),
  };
}

// --- sidecar sets ---------------------------------------------------------------------------

/** The default configuration (an empty document's) with `total` sets, the proxy's included, `matching` of them selecting the pod. */
const setsSnapshot = (total: number, matching: number): ConfigSnapshot =>
  makeSnapshot(mustParseConfig(sidecarSetsYaml(total, matching)));

const SET_SHAPES: [total: number, matching: number][] = [
  [5, 1],
  [5, 5],
  [20, 1],
  [20, 5],
];

interface SetsResult {
  total: number;
  matching: number;
  alone: number;
  sets: number;
  ratio: number;
  low: number;
  high: number;
}

/** The pod injected with `sets`, against the proxy alone, in alternating rounds of one run. */
function benchSets(c: Case, total: number, matching: number): SetsResult {
  const withSets = setsSnapshot(total, matching);
  const op =
    (snap: ConfigSnapshot, expected: number): Op =>
    () => {
      const r = injectPod({
        pod: c.pod,
        snapshot: snap,
        namespaceName: 'bench',
        namespace: 'assume-enabled',
        nativeSidecarSupported: true,
      });
      if (!r.injected || r.sets.length !== expected)
        throw new Error(`${c.label}: not injected with ${expected} sets`);
      return serializePatch(r.patch).length;
    };
  const alone = op(snapshot, 1);
  const sets = op(withSets, matching);
  const n = { alone: calibrate(alone), sets: calibrate(sets) };
  const rounds: { alone: number; sets: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0)
      rounds.push({ alone: timeBatch(alone, n.alone), sets: timeBatch(sets, n.sets) });
    else rounds.push({ sets: timeBatch(sets, n.sets), alone: timeBatch(alone, n.alone) });
  }
  const ratios = rounds.map((r) => r.sets / r.alone).sort((a, b) => a - b);
  return {
    total,
    matching,
    alone: median(rounds.map((r) => r.alone)),
    sets: median(rounds.map((r) => r.sets)),
    ratio: median(ratios),
    low: ratios[0] ?? 0,
    high: ratios[ratios.length - 1] ?? 0,
  };
}

function setsTable(results: SetsResult[]): string {
  const rows = results.map((r) => [
    `${r.total} sets, ${r.matching} matching`,
    `${ns(r.alone)}/op`,
    `${ns(r.sets)}/op`,
    `${r.ratio.toFixed(2)}x`,
    `${r.low.toFixed(2)}-${r.high.toFixed(2)}x`,
  ]);
  const head = ['configuration', 'the proxy alone', 'with the sets', 'ratio (median)', 'spread'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `| ${cells.map((x, i) => x.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

// --- report ---------------------------------------------------------------------------------

function envCount(pod: PodLike): number {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  return all.reduce((n, c) => n + (c.env?.length ?? 0), 0);
}

function ns(x: number): string {
  return x >= 1e6
    ? `${(x / 1e6).toFixed(2)} ms`
    : x >= 1e3
      ? `${(x / 1e3).toFixed(1)} µs`
      : `${x.toFixed(0)} ns`;
}

function kib(length: number): string {
  return `${(length / 1024).toFixed(1)} KiB`;
}

function table(results: Result[]): string {
  const head = [
    'pod',
    'pod JSON',
    'patch JSON',
    'containers',
    'env vars',
    'inject + stringify',
    'parse + stringify',
    'ratio',
  ];
  const rows = results.map(({ c, patchLength, inject, baseline, ratio }) => [
    c.label,
    kib(c.json.length),
    kib(patchLength),
    String(c.pod.spec?.containers.length ?? 0),
    String(envCount(c.pod)),
    `${ns(inject)}/op`,
    `${ns(baseline)}/op`,
    `${ratio.toFixed(2)}x`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    `| ${cells.map((s, i) => s.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(head), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

function main(): void {
  const cases = [
    caseOf('one container', 'built in', onePod()),
    medianCorpusPod(),
    caseOf('huge', 'built in: 30 containers, 1,500 env vars', hugePod()),
  ];
  console.log(
    `Injection benchmark: Node.js ${process.version}, ${ROUNDS} rounds of ~${BATCH_MS} ms batches, median per op`,
  );
  console.log(
    'inject + stringify: injectPod (default configuration, native sidecar) and serializePatch of its patch (the JSON the webhook sends)',
  );
  console.log('parse + stringify:  JSON.parse and JSON.stringify of the same pod, the baseline\n');
  const results = cases.map(bench);
  console.log(table(results));
  console.log('');
  for (const { c } of results) console.log(`${c.label}: ${c.source}`);
  const worst = Math.max(...results.map((r) => r.ratio));
  const verdict = worst <= TARGET_RATIO ? 'met' : 'NOT met';
  console.log(
    `\nTarget: injection within ${TARGET_RATIO}x of the baseline: ${verdict} (worst ${worst.toFixed(2)}x)`,
  );
  const typical = cases[1] as Case;
  console.log(
    `\nSidecar sets: the ${typical.label} injected with N sets (the proxy's among them), against the proxy alone, alternating rounds`,
  );
  const sets = SET_SHAPES.map(([total, matching]) => benchSets(typical, total, matching));
  console.log(setsTable(sets));
  const flat = sets.find((r) => r.total === 5 && r.matching === 1);
  console.log(
    `Target: 5 sets of which 1 matches within 1.10x of one set: ${flat && flat.ratio <= 1.1 ? 'met' : 'NOT met'} (${flat?.ratio.toFixed(2)}x)`,
  );
  if (sinkValue() < 0) console.log(sinkValue()); // never true; keeps the results alive
}

main();
