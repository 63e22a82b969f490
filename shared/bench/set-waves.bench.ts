// `node shared/dist/bench/set-waves.bench.js`: what the sidecar sets' waves add to one wave step
// of the controller. A step assesses every owner for each set (OwnerIndex.assessSet) and plans
// each set's wave; the proxy's own wave is planned over the owners that can matter. Measured here
// is that pure part (assessOwner and planFleet, as the step calls them) over a fleet of stamped
// Deployments, for the proxy alone and with 1, 5 and 20 sets besides it, in alternating rounds
// of the same run; the figures are ratios to the proxy alone, with their spread over the rounds.

import { median, sidecarSetsYaml } from '@outrigger/testkit';
import {
  DEFAULT_CONFIG_YAML,
  appliedSets,
  assessOwner,
  configRevision,
  mustParseConfig,
  planFleet,
  quietness,
  setRolloutConfig,
  setWaveKeys,
  type AppliedSet,
  type Config,
  type OwnerAssessment,
  type OwnerInput,
  type WaveState,
  type Workload,
} from '../src';

const OWNERS = Number(process.env.BENCH_OWNERS ?? 2000);
const ROUNDS = 9;
const NOW = Date.parse('2026-01-01T00:00:00Z');
const namespace = { name: 'shop', annotations: { 'outrigger.dev/inject': 'enabled' } };
const wave: WaveState = { stopped: undefined, resumeRequested: false, resumedAtMs: undefined };

function fleet(config: Config): Workload[] {
  const revision = configRevision(config);
  const stamps = Object.fromEntries(
    appliedSets(config).map((a) => [setWaveKeys(a.set.name).configRevision, a.revision]),
  );
  return Array.from({ length: OWNERS }, (_, i) => {
    const name = `app-${i}`;
    return {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace: 'shop', generation: 1, labels: { app: name } },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: {
            labels: { app: name, 'outrigger.dev/stamped': 'true' },
            annotations: {
              'outrigger.dev/owner-kind': 'Deployment',
              'outrigger.dev/owner-name': name,
              'outrigger.dev/config-revision': revision,
              ...stamps,
            },
          },
          spec: { containers: [{ name: 'app', image: `${name}:1` }] },
        },
      },
      status: {
        observedGeneration: 1,
        replicas: 2,
        updatedReplicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
      },
    } as unknown as Workload;
  });
}

/** One wave's planning over the fleet: every owner assessed, the plan over those that matter. */
function planOne(
  workloads: readonly Workload[],
  config: Config,
  revision: string,
  set?: AppliedSet,
): number {
  const active: OwnerAssessment[] = [];
  const inWave: OwnerAssessment[] = [];
  for (const workload of workloads) {
    const input: OwnerInput = {
      workload,
      namespace,
      config,
      revision,
      pods: { escaped: 0, outdated: 0, injected: 2 },
      nowMs: NOW,
      ...(set ? { set } : {}),
    };
    const a = assessOwner(input);
    const q = quietness(a);
    if (q === 'active') active.push(a);
    else if (q === 'in-wave') inWave.push(a);
  }
  const input = { revision, rollout: config.rollout, wave, nowMs: NOW };
  return planFleet(input, { active, inWave }).report.length + active.length;
}

/** A step: the proxy's wave, then each set's. */
function step(workloads: readonly Workload[], config: Config): number {
  let n = planOne(workloads, config, configRevision(config));
  for (const a of appliedSets(config))
    n += planOne(workloads, setRolloutConfig(config, a), a.revision, a);
  return n;
}

function timeMs(op: () => number): number {
  const start = process.hrtime.bigint();
  const n = op();
  if (n < 0) process.stdout.write('');
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const cases = [
  { label: 'proxy alone', yaml: '' },
  { label: '1 set', yaml: sidecarSetsYaml(2, 2) },
  { label: '5 sets', yaml: sidecarSetsYaml(6, 6) },
  { label: '20 sets', yaml: sidecarSetsYaml(21, 21) },
].map((c) => {
  const config = mustParseConfig(c.yaml === '' ? DEFAULT_CONFIG_YAML : c.yaml);
  return { ...c, config, workloads: fleet(config), times: [] as number[] };
});

for (const c of cases) for (let i = 0; i < 3; i++) timeMs(() => step(c.workloads, c.config));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? cases : [...cases].reverse();
  for (const c of order) c.times.push(timeMs(() => step(c.workloads, c.config)));
}
const base = median(cases[0]?.times ?? []);
process.stdout.write(
  `wave step planning, ${OWNERS} stamped Deployments, ${ROUNDS} rounds (alternating order)\n`,
);
for (const c of cases) {
  const ratios = c.times.map((t, i) => t / (cases[0]?.times[i] ?? t));
  const m = median(c.times);
  process.stdout.write(
    `  ${c.label.padEnd(12)} ${m.toFixed(1).padStart(7)} ms  ${(m / base).toFixed(2)}x  (per round ${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)}x)\n`,
  );
}
