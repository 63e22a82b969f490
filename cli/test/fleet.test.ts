// The fleet table of `outrigger status`, computed by fleetStatus from what the cluster holds at a
// given time (the clock is an input: these tests move it) and printed by formatFleet: an
// upgrade's first step, a restart in flight, the same restart past its deadline, and a wave
// waiting for its maintenance window.

import {
  OWNER_KIND,
  OWNER_NAME,
  REVISION,
  appliedSets,
  configRevision,
  formatTime,
  mustParseConfig,
  restartPatch,
  setRevisionLabel,
  type Config,
  type PodLike,
  type Workload,
} from '@outrigger/shared';
import { fleetStatus, formatFleet, type FleetInput } from '../src/fleet';

const T0 = Date.parse('2026-05-04T10:00:00Z'); // a Monday
const SECOND = 1000;
const OLD = '0000000000';

const config = (extra = ''): Config =>
  mustParseConfig(
    `rollout:\n  maxConcurrent: 1\n  progressDeadlineSeconds: 600\n  canary:\n    count: 0\n${extra}`,
  );

/** A stamped Deployment of the opted-in namespace, at generation 1 rolled out at `stamp`. */
function deployment(
  name: string,
  o: { stamp?: string; annotations?: Record<string, string>; rolling?: boolean } = {},
): Workload {
  const generation = o.rolling ? 2 : 1;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: 'shop',
      generation,
      resourceVersion: '7',
      annotations: o.annotations,
    },
    spec: {
      replicas: 1,
      template: {
        metadata: {
          labels: { app: name, 'outrigger.dev/stamped': 'true' },
          annotations: {
            [OWNER_KIND]: 'Deployment',
            [OWNER_NAME]: name,
            'outrigger.dev/config-revision': o.stamp ?? OLD,
          },
        },
        spec: { containers: [{ name: 'app', image: `${name}:1` }] },
      },
    },
    // Rolling: the Deployment controller saw the new template and has not updated a pod yet.
    status: {
      observedGeneration: generation,
      replicas: 1,
      updatedReplicas: o.rolling ? 0 : 1,
      readyReplicas: 1,
      availableReplicas: 1,
    },
  };
}

/** An injected pod of a Deployment, at `revision`. */
const injectedPod = (owner: string, revision: string): PodLike => ({
  metadata: {
    name: `${owner}-pod`,
    namespace: 'shop',
    labels: { app: owner, [REVISION]: revision },
    annotations: { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: owner },
  },
});

/** The Deployment after our restart patch to `revision` at `nowMs`, before it rolled. */
function restarted(name: string, revision: string, nowMs: number): Workload {
  const order = {
    owner: { namespace: 'shop', kind: 'Deployment' as const, name },
    kind: 'rollout' as const,
    revision,
  };
  const patch = restartPatch({ workload: deployment(name), order, nowMs }) as {
    metadata: { annotations: Record<string, string> };
  };
  return deployment(name, {
    stamp: revision,
    annotations: patch.metadata.annotations,
    rolling: true,
  });
}

function input(c: Config, workloads: Workload[], nowMs: number): FleetInput {
  return {
    config: c,
    revision: configRevision(c),
    configMapAnnotations: undefined,
    namespaces: [{ name: 'shop', annotations: { 'outrigger.dev/inject': 'enabled' } }],
    workloads: workloads.map((w) => ({ kind: 'Deployment', object: w })),
    pods: workloads.map((w) => injectedPod(w.metadata?.name ?? '', OLD)),
    nowMs,
    systemNamespace: 'outrigger-system',
  };
}

const cells = (table: string, name: string) =>
  table
    .split('\n')
    .find((line) => line.split(/\s+/)[2] === name)
    ?.split(/\s{2,}/);

describe('the fleet table', () => {
  const c = config();
  const revision = configRevision(c);

  it('at the start of an upgrade: one restart within the budget, the next owner waits for it', () => {
    const status = fleetStatus(input(c, [deployment('a'), deployment('b')], T0));
    expect(status.rows.map((r) => [r.name, r.state, r.action, r.reason])).toEqual([
      ['a', 'outdated', 'restart', 'outdated'],
      ['b', 'outdated', 'wait', 'budget'],
    ]);
    const table = formatFleet(status, true);
    expect(table.split('\n')[0]).toMatch(
      /^NAMESPACE\s+KIND\s+NAME\s+INJECTED\s+PINNED\s+RUNNING\s+STATE\s+GATE\s+ACTION\s+REASON\s+DETAIL$/,
    );
    expect(cells(table, 'a')).toEqual(
      expect.arrayContaining(['shop', 'Deployment', 'a', '1/1', OLD, `${OLD}:1`, 'outdated']),
    );
    expect(table).toContain(`revision ${revision}, mode auto, wave: 0 rolling of at most 1`);
    // Without wide, no ACTION, REASON or DETAIL.
    expect(formatFleet(status, false).split('\n')[0]).not.toContain('ACTION');
  });

  it('a restart in flight holds the budget until it completes', () => {
    const a = restarted('a', revision, T0);
    const status = fleetStatus(input(c, [a, deployment('b')], T0 + 30 * SECOND));
    expect(status.rows.map((r) => [r.name, r.state, r.reason])).toEqual([
      ['a', 'rolling', 'following'],
      ['b', 'outdated', 'budget'],
    ]);
    expect(status.rolling).toBe(1);
    expect(formatFleet(status, false)).toContain('wave: 1 rolling of at most 1');
  });

  it('the same restart past its progress deadline is stalled and stops the wave', () => {
    const a = restarted('a', revision, T0);
    const before = fleetStatus(input(c, [a, deployment('b')], T0 + 600 * SECOND));
    expect(before.stopped).toBeUndefined();
    const after = fleetStatus(input(c, [a, deployment('b')], T0 + 601 * SECOND));
    expect(after.rows.find((r) => r.name === 'a')?.state).toBe('stalled');
    expect(after.stopped).toBeDefined();
    expect(after.rows.find((r) => r.name === 'b')?.reason).toBe('wave-stopped');
    expect(formatFleet(after, false)).toContain('(resume: outrigger resume)');
  });

  it('outside the maintenance windows, says when the next one opens', () => {
    const windowed = config(
      '  windows:\n    - days: [Sat, Sun]\n      start: "02:00"\n      end: "05:00"\n',
    );
    const status = fleetStatus(input(windowed, [deployment('a')], T0));
    expect(status.rows[0]).toMatchObject({ action: 'wait', reason: 'window-closed' });
    const opens = formatTime(Date.parse('2026-05-09T02:00:00Z'));
    expect(status.nextWindow).toBe(opens);
    expect(formatFleet(status, false)).toContain(`closed, the next opens at ${opens}`);
    // Inside the window, the same owner restarts.
    const open = fleetStatus(
      input(windowed, [deployment('a')], Date.parse('2026-05-09T03:00:00Z')),
    );
    expect(open.rows[0]).toMatchObject({ action: 'restart' });
    expect(formatFleet(open, false)).toContain('; open now');
  });
});

describe('the fleet table with sidecar sets', () => {
  const sets =
    'sets:\n  - {name: log-shipper, containers: [{name: shipper, image: "ghcr.io/acme/s:1"}]}\n';
  const c = config(sets);

  it("shows each set's revisions on every owner's pods, and the sets' current revisions", () => {
    const [shipper] = appliedSets(c);
    const base = input(c, [deployment('a'), deployment('b')], T0);
    const withSet = (pod: PodLike, revision: string): PodLike => ({
      ...pod,
      metadata: {
        ...pod.metadata,
        labels: { ...pod.metadata?.labels, [setRevisionLabel('log-shipper')]: revision },
      },
    });
    const [podA, podB] = base.pods;
    if (!podA || !podB || !shipper) throw new Error('fixture');
    const status = fleetStatus({ ...base, pods: [withSet(podA, shipper.revision), podB] });
    expect(status.sets).toEqual([{ name: 'log-shipper', revision: shipper.revision }]);
    expect(status.rows.map((r) => [r.name, r.sets])).toEqual([
      ['a', { 'log-shipper': { [shipper.revision]: 1 } }],
      ['b', {}],
    ]);
    const table = formatFleet(status, false);
    expect(table.split('\n')[0]).toMatch(
      /^NAMESPACE\s+KIND\s+NAME\s+INJECTED\s+PINNED\s+RUNNING\s+SETS\s+STATE\s+GATE$/,
    );
    expect(cells(table, 'a')).toContain(`log-shipper=${shipper.revision}:1`);
    expect(cells(table, 'b')).toContain('-');
    expect(table).toContain(`sidecar sets: log-shipper ${shipper.revision}`);
  });

  it('keeps the table of before where the configuration has no sets', () => {
    const table = formatFleet(fleetStatus(input(config(), [deployment('a')], T0)), false);
    expect(table).not.toContain('SETS');
    expect(table).not.toContain('sidecar sets');
  });
});
