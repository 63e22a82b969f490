// What an admin scrapes and looks at: the chart's PodMonitor (Prometheus Operator), rendered with
// its value on, selects both components' metrics port; the Grafana dashboard in
// manifests/grafana is a dashboard in Grafana's JSON model (checked against the types Grafana
// generates from its schema, @grafana/schema), and every metric it queries is one the running
// webhook and controller export.

import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { SYSTEM_NAMESPACE } from '@outrigger/shared';
import {
  CHART_DIR,
  connect,
  dashboardProblems,
  helm,
  metricNames,
  parseManifests,
  repoRoot,
  TestInstall,
  type Cluster,
  type Manifest,
  useTestInstall,
} from '../src';

const DASHBOARD = path.join(repoRoot, 'manifests', 'grafana', 'outrigger-dashboard.json');

interface Target {
  expr: string;
}
interface Panel {
  type: string;
  title: string;
  targets?: Target[];
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] };
const queried = new Set(
  dashboard.panels
    .flatMap((p) => p.targets ?? [])
    .flatMap((t) => [...t.expr.matchAll(/\boutrigger_[a-z_]+/g)].map((m) => m[0])),
);

describe('the Grafana dashboard', () => {
  it("is a dashboard in Grafana's JSON model", () => {
    expect(dashboardProblems(readFileSync(DASHBOARD, 'utf8'))).toEqual([]);
  });

  it('would refuse a panel with a field the model does not have, or a value of the wrong type', () => {
    const broken = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
      refresh: unknown;
      panels: Record<string, unknown>[];
    };
    broken.panels[1] = { ...broken.panels[1], gridpos: {} };
    broken.refresh = 30;
    // In the order they come in the file: refresh, then the panels.
    expect(dashboardProblems(JSON.stringify(broken))).toEqual([
      "Type 'number' is not assignable to type 'string'.",
      expect.stringContaining('\'"gridpos"\' does not exist'),
    ]);
  });

  it('shows admissions, latency, sidecar sets, waves, stalls, heals and certificate expiry', () => {
    for (const metric of [
      'outrigger_webhook_admissions_total',
      'outrigger_webhook_set_injections_total',
      'outrigger_webhook_admission_duration_seconds_bucket',
      'outrigger_controller_owners',
      'outrigger_controller_wave_stage',
      'outrigger_controller_rollout_stalls_total',
      'outrigger_controller_restarts_total',
      'outrigger_webhook_certificate_expiry_timestamp_seconds',
    ])
      expect(queried).toContain(metric);
  });
});

describe('the PodMonitor', () => {
  const render = (...sets: string[]) =>
    helm(
      'template',
      'outrigger',
      CHART_DIR,
      '--namespace',
      SYSTEM_NAMESPACE,
      ...sets.flatMap((s) => ['--set', s]),
    ).then(parseManifests);

  it('is not rendered by default', async () => {
    expect((await render()).filter((m) => m.kind === 'PodMonitor')).toEqual([]);
  });

  it('refuses an interval that is no duration and labels that are no map, naming the value', async () => {
    const on = 'monitoring.podMonitor.enabled=true';
    await expect(render(on, 'monitoring.podMonitor.interval=30')).rejects.toThrow(
      /monitoring.podMonitor.interval must be a duration such as 30s or 1m; got "30"/,
    );
    await expect(render(on, 'monitoring.podMonitor.labels=prometheus')).rejects.toThrow(
      /monitoring.podMonitor.labels must be a map of labels/,
    );
  });

  it("renders with the value on and selects both components' metrics port", async () => {
    const objects = await render(
      'monitoring.podMonitor.enabled=true',
      'monitoring.podMonitor.labels.release=prometheus',
    );
    const monitor = objects.find((m) => m.kind === 'PodMonitor') as Manifest & {
      spec: {
        selector: {
          matchLabels: Record<string, string>;
          matchExpressions: { key: string; values: string[] }[];
        };
        podMetricsEndpoints: { port: string }[];
      };
    };
    expect(monitor.metadata?.labels).toMatchObject({ release: 'prometheus' });
    expect(monitor.metadata?.namespace).toBe(SYSTEM_NAMESPACE);
    const { matchLabels, matchExpressions } = monitor.spec.selector;
    const selects = (labels: Record<string, string>) =>
      Object.entries(matchLabels).every(([k, v]) => labels[k] === v) &&
      matchExpressions.every((e) => e.values.includes(labels[e.key] ?? ''));
    type Workload = Manifest & {
      spec: {
        template: {
          metadata: { labels: Record<string, string> };
          spec: { containers: { ports?: { name: string }[] }[] };
        };
      };
    };
    const selected = objects
      .filter((m): m is Workload => m.kind === 'Deployment')
      .filter((d) => selects(d.spec.template.metadata.labels));
    expect(selected.map((d) => d.metadata?.name).sort()).toEqual([
      'outrigger-controller',
      'outrigger-webhook',
    ]);
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    for (const d of selected)
      expect(d.spec.template.spec.containers.flatMap((c) => c.ports ?? [])).toContainEqual(
        expect.objectContaining({ name: endpoint?.port }),
      );
  });
});

describe('the metrics the dashboard queries', () => {
  const cluster: Cluster = connect();
  const install = new TestInstall(cluster, { configYaml: 'rollout:\n  maxConcurrent: 1\n' });

  useTestInstall(install, { build: ['webhook', 'controller'] });

  it('are every one exported by the running webhook and controller', async () => {
    const controller = await install.startController();
    const exported = new Set([
      ...(await metricNames(install.webhookMetricsPort)),
      ...(await metricNames(controller.metricsPort)),
    ]);
    expect([...queried].filter((m) => !exported.has(m))).toEqual([]);
  });
});
