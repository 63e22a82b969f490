// The admission policies compiled from a configuration inject a pod as the webhook does: every
// golden case of shared/testdata/cases (with its configuration) and every pod of the corpus, when
// it is there, is created twice on the real API server with server-side dry-run, once in a
// namespace the webhook (the real process) injects and once in one the compiled policies inject,
// and the two pods the API server would store are compared field by field. Policies are compiled
// as the controller compiles them in the `both` mode; pods that ask for overrides are left to the
// webhook there, and the suite checks that the policies leave them alone.

import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import {
  DEFAULT_CONFIG_YAML,
  ENABLED,
  INJECTION_LABEL,
  OVERRIDE_PREFIX,
  OWNER_NAME,
  REVISION,
  SKIPPED,
  TEMPLATE_PATHS,
  appliedSets,
  compilePolicies,
  injectPod,
  isLabelValue,
  makeSnapshot,
  mustParseConfig,
  resolveOwner,
  type ConfigSnapshot,
  type PodLike,
} from '@outrigger/shared';
import { CORPUS_DIR, corpusAbsent, corpusFiles, haveCorpus, quantile } from '@outrigger/testkit';
import {
  TestInstall,
  apply,
  connect,
  createNamespace,
  deleteNamespace,
  done,
  pending,
  remove,
  repoRoot,
  waitFor,
} from '../src';
import { POLICY_RUN_LABEL, forRun, policyApiAbsent, policyApiVersion } from '../src/policy';

const CASES = path.join(repoRoot, 'shared', 'testdata', 'cases');
const MINUTES = 60_000;

interface GoldenPod {
  name: string;
  pod: PodLike;
}

/** A workload's template as its controller would make a pod of it: a controller reference. */
function podOf(kind: string, template: Record<string, unknown>, name: string): PodLike {
  const pod = JSON.parse(JSON.stringify(template)) as PodLike & {
    metadata?: Record<string, unknown>;
  };
  const meta: Record<string, unknown> = { ...(pod.metadata ?? {}) };
  delete meta.namespace;
  const owner = typeof meta.name === 'string' ? meta.name : name;
  if (kind !== 'Pod') {
    const hash = '7d4b9c8f5';
    const ref =
      kind === 'Deployment'
        ? { kind: 'ReplicaSet', name: `${owner}-${hash}` }
        : { kind: kind === 'CronJob' ? 'Job' : kind, name: `${owner}-1` };
    meta.ownerReferences = [
      {
        apiVersion: 'apps/v1',
        ...ref,
        uid: '0b7e1f0c-0000-4000-8000-000000000001',
        controller: true,
      },
    ];
    if (kind === 'Deployment')
      meta.labels = { ...(meta.labels as object), 'pod-template-hash': hash };
  }
  meta.name = name;
  delete meta.generateName;
  return { ...pod, metadata: meta };
}

/** The pods of a manifest file: every Pod, and a pod of every workload's template. */
function podsOfFile(file: string, label: string): GoldenPod[] {
  const docs = parseAllDocuments(readFileSync(file, 'utf8')).filter((d) => d.errors.length === 0);
  const out: GoldenPod[] = [];
  const visit = (value: unknown) => {
    if (typeof value !== 'object' || value === null) return;
    const o = value as Record<string, unknown>;
    if (Array.isArray(o.items)) return o.items.forEach(visit);
    const kind = typeof o.kind === 'string' ? o.kind : '';
    const at = TEMPLATE_PATHS[kind];
    if (!at) return;
    const template = at.reduce<unknown>(
      (x, key) =>
        typeof x === 'object' && x !== null ? (x as Record<string, unknown>)[key] : undefined,
      o,
    );
    if (typeof template !== 'object' || template === null) return;
    const name = `golden-${out.length}`;
    const meta = (o.metadata ?? {}) as { name?: string };
    const pod = podOf(kind, template as Record<string, unknown>, name);
    if (kind !== 'Pod' && meta.name)
      (pod.metadata as Record<string, unknown>).name = `${meta.name}-x${out.length}`;
    out.push({ name: `${label} #${out.length} (${kind})`, pod });
  };
  for (const d of docs) visit(d.toJS());
  return out;
}

/** Each configuration's cases: the golden cases by their `# config:` line, the corpus under the default. */
function groups(): Map<string, { yaml: string; pods: GoldenPod[] }> {
  const byConfig = new Map<string, { yaml: string; pods: GoldenPod[] }>();
  const add = (configFile: string, yaml: string, pods: GoldenPod[]) => {
    const g = byConfig.get(configFile) ?? { yaml, pods: [] };
    g.pods.push(...pods);
    byConfig.set(configFile, g);
  };
  for (const file of readdirSync(CASES).sort()) {
    if (!/\.ya?ml$/.test(file) || file.endsWith('.config.yaml')) continue;
    const text = readFileSync(path.join(CASES, file), 'utf8');
    // The policy mode runs where native sidecars do (Kubernetes 1.34 and newer).
    if (/^# native-sidecars: unsupported/m.test(text)) continue;
    const config = /^# config: (\S+)/m.exec(text)?.[1];
    const yaml = config ? readFileSync(path.join(CASES, config), 'utf8') : DEFAULT_CONFIG_YAML;
    add(config ?? 'default', yaml, podsOfFile(path.join(CASES, file), `cases/${file}`));
  }
  if (haveCorpus())
    for (const file of corpusFiles())
      add(
        'default',
        DEFAULT_CONFIG_YAML,
        podsOfFile(path.join(CORPUS_DIR, file), `corpus/${file}`),
      );
  else
    process.stderr.write(`[e2e] ${corpusAbsent('the corpus part of the policy golden suite')}\n`);
  return byConfig;
}

/** The pod as the API server would store it, without what differs from one create to the next. */
function normalized(pod: V1Pod): unknown {
  const copy = JSON.parse(
    JSON.stringify(pod).replace(/kube-api-access-[a-z0-9]{5}/g, 'kube-api-access'),
  ) as V1Pod;
  const meta = copy.metadata ?? {};
  for (const k of [
    'uid',
    'creationTimestamp',
    'namespace',
    'resourceVersion',
    'managedFields',
    'generation',
  ] as const)
    delete meta[k];
  return copy;
}

const overridden = (pod: PodLike): boolean =>
  Object.keys(pod.metadata?.annotations ?? {}).some((k) => k.startsWith(OVERRIDE_PREFIX));

describe('the compiled admission policies inject as the webhook does', () => {
  const cluster = connect();
  const install = new TestInstall(cluster, {
    configYaml: DEFAULT_CONFIG_YAML,
    prefix: 'golden-sys',
  });
  let version: Awaited<ReturnType<typeof policyApiVersion>>;
  let byWebhook = '';
  let byPolicy = '';
  let applied: KubernetesObject[] = [];

  beforeAll(async () => {
    version = await policyApiVersion(cluster);
    if (!version) return policyApiAbsent('the policy golden suite');
    await install.setup();
    byWebhook = await install.newNamespace('golden-w', { labels: { [INJECTION_LABEL]: ENABLED } });
    byPolicy = await createNamespace(cluster, {
      prefix: 'golden-p',
      labels: { [INJECTION_LABEL]: ENABLED, [POLICY_RUN_LABEL]: install.run },
    });
  }, 4 * MINUTES);

  afterAll(async () => {
    if (applied.length > 0) await remove(cluster, applied).catch(() => undefined);
    if (byPolicy) await deleteNamespace(cluster, byPolicy);
    await install.teardown();
    await cluster.close();
  }, 3 * MINUTES);

  const create = (namespace: string, pod: PodLike): Promise<V1Pod | Error> =>
    cluster.core
      .createNamespacedPod({ namespace, dryRun: 'All', body: pod as V1Pod })
      .catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));

  /** The milliseconds each of `n` creates of `pod` in `namespace` took, one after another. */
  async function timed(namespace: string, pod: PodLike, n: number): Promise<number[]> {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const started = performance.now();
      const made = await create(namespace, pod);
      out.push(performance.now() - started);
      if (made instanceof Error) throw made;
    }
    return out;
  }

  /** Whether the probe pod carries what `snapshot` gives it: its proxy's and its sets' revisions. */
  const carries = (pod: V1Pod | Error, snapshot: ConfigSnapshot, namespace: string) => {
    if (pod instanceof Error) return false;
    const want = injectPod({
      pod: probe,
      snapshot,
      namespaceName: namespace,
      namespace: { name: namespace, labels: { [INJECTION_LABEL]: ENABLED } },
      nativeSidecarSupported: true,
    });
    const sets = want.injected ? want.sets : [];
    const labels = pod.metadata?.labels ?? {};
    return (
      labels[REVISION] === snapshot.revision &&
      appliedSets(snapshot.config).every(
        (a) => labels[a.revisionLabel] === (sets.includes(a.set.name) ? a.revision : undefined),
      )
    );
  };

  const probe: PodLike = {
    metadata: { name: 'golden-probe', labels: { app: 'probe' } },
    spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
  };

  /** The webhook on `yaml`, and the policies compiled from it, both in force. */
  async function configure(yaml: string): Promise<ConfigSnapshot> {
    const snapshot = makeSnapshot(mustParseConfig(yaml));
    await install.setConfig(yaml);
    if (applied.length > 0) await remove(cluster, applied);
    applied = forRun(
      compilePolicies({
        current: snapshot,
        pinned: new Map(),
        pinnedSets: new Map(),
        nativeSidecarSupported: true,
        systemNamespace: install.system,
        mode: 'both',
        apiVersion: version ?? 'admissionregistration.k8s.io/v1beta1',
        failurePolicy: 'Fail',
      }),
      install.run,
    );
    await apply(cluster, applied);
    for (const [where, namespace] of [
      ['webhook', byWebhook],
      ['policies', byPolicy],
    ] as const)
      await waitFor(
        `the ${where} on revision ${snapshot.revision}`,
        async () => {
          const pod = await create(namespace, probe);
          return carries(pod, snapshot, namespace)
            ? done(pod)
            : pending(pod instanceof Error ? pod.message : pod.metadata?.labels);
        },
        { timeoutMs: 60_000, intervalMs: 500 },
      );
    return snapshot;
  }

  it(
    'measures pod create latency through the policies, the webhook, and neither, in turn',
    async () => {
      if (!version) return;
      await configure(DEFAULT_CONFIG_YAML);
      const neither = await install.newNamespace('golden-n');
      const paths = { policies: byPolicy, webhook: byWebhook, neither } as const;
      const times: Record<keyof typeof paths, number[]> = {
        policies: [],
        webhook: [],
        neither: [],
      };
      const pod = podOf(
        'Deployment',
        { metadata: { labels: { app: 'timed' } }, spec: probe.spec },
        'timed',
      );
      // Rounds alternate the order, so that no path always goes first on a warm server.
      const order = Object.keys(paths) as (keyof typeof paths)[];
      for (let round = 0; round < 6; round++) {
        const turn = round % 2 === 0 ? order : [...order].reverse();
        for (const which of turn) times[which].push(...(await timed(paths[which], pod, 40)));
      }
      const row = (which: keyof typeof paths) => {
        const t = times[which];
        return `${which.padEnd(8)} p50 ${quantile(t, 0.5).toFixed(1)} ms  p99 ${quantile(t, 0.99).toFixed(1)} ms  (${t.length} creates)`;
      };
      process.stderr.write(
        `[e2e] pod create latency (server-side dry run, default configuration):\n  ${order.map(row).join('\n  ')}\n`,
      );
      for (const which of order) expect(times[which]).toHaveLength(240);
    },
    5 * MINUTES,
  );

  for (const [config, group] of groups()) {
    it(
      `config ${config}: ${group.pods.length} pods`,
      async () => {
        if (!version) return;
        await configure(group.yaml);
        const mismatches: string[] = [];
        for (const { name, pod } of group.pods) {
          const [w, p] = await Promise.all([create(byWebhook, pod), create(byPolicy, pod)]);
          if (w instanceof Error || p instanceof Error) {
            if (!(w instanceof Error && p instanceof Error))
              mismatches.push(
                `${name}: ${w instanceof Error ? `the webhook's create failed: ${w.message}` : `the policies' create failed: ${p instanceof Error ? p.message : ''}`}`,
              );
            continue;
          }
          if (overridden(pod)) {
            // Left to the webhook: the policies neither inject nor mark it.
            const labels = p.metadata?.labels ?? {};
            if (labels[REVISION] !== undefined || labels[SKIPPED] !== undefined)
              mismatches.push(`${name}: asks for overrides, but the policies changed it`);
            continue;
          }
          const expected = normalized(w) as V1Pod;
          // A documented difference: CEL has no hash, so an owner name that is no label value
          // (over 63 characters, say) is left off the labels instead of shortened.
          if (!isLabelValue(resolveOwner(w as PodLike).name))
            delete expected.metadata?.labels?.[OWNER_NAME];
          const got = normalized(p);
          const diff = fieldDiff(expected, got);
          if (diff) mismatches.push(`${name}:\n${diff}`);
        }
        expect(mismatches).toEqual([]);
      },
      5 * MINUTES,
    );
  }
});

/** Every leaf of a JSON value as `path = value`, in order. */
function leaves(value: unknown, at = ''): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => leaves(v, `${at}[${i}]`));
  if (typeof value === 'object' && value !== null)
    return Object.entries(value).flatMap(([k, v]) => leaves(v, `${at}.${k}`));
  return [`${at} = ${JSON.stringify(value)}`];
}

/** The fields only the webhook's pod has (-) and only the policies' has (+), or '' when equal. */
function fieldDiff(webhook: unknown, policy: unknown): string {
  const a = leaves(webhook);
  const b = leaves(policy);
  const inB = new Set(b);
  const inA = new Set(a);
  const out = [
    ...a.filter((l) => !inB.has(l)).map((l) => `  - ${l}`),
    ...b.filter((l) => !inA.has(l)).map((l) => `  + ${l}`),
  ];
  return out.slice(0, 30).join('\n');
}
