// The fleet as `outrigger status` shows it, computed from what the cluster holds with the
// controller's own rules (shared/src/rollout/owner-state.ts, wave.ts): one row per workload in scope, and the wave.
// Pure: the command fetches the objects and prints the result.

import {
  ESCAPED_POD_SELECTOR,
  RESTARTED_AT,
  REVISION,
  SETS_PREFIX,
  appliedSets,
  asWorkload,
  assessOwner,
  countPodsByOwner,
  injectedContainerNames,
  describeWindow,
  formatTime,
  ownerKey,
  parseTime,
  planWave,
  readStamp,
  readWave,
  type Config,
  type KubeObject,
  type NamespaceMeta,
  type OwnerState,
  type PodCounts,
  type PodLike,
  type StampedKind,
  type WaveStage,
} from '@outrigger/shared';

export { ESCAPED_POD_SELECTOR };

export interface FleetInput {
  config: Config;
  revision: string;
  /** The configuration ConfigMap's annotations: the wave's stop and resume. */
  configMapAnnotations: Record<string, string> | undefined;
  namespaces: readonly NamespaceMeta[];
  workloads: readonly { kind: StampedKind; object: KubeObject }[];
  pods: readonly PodLike[];
  nowMs: number;
  systemNamespace: string;
}

export interface FleetRow {
  namespace: string;
  kind: StampedKind;
  name: string;
  /** Pods carrying the sidecar, of all the owner's pods. */
  injected: number;
  pods: number;
  /** The revision in the template's stamp, if any: what new pods of this owner get. */
  revision: string | undefined;
  /** The revisions the owner's injected pods run, with how many of each. */
  running: Record<string, number>;
  /** Of each sidecar set other than the proxy, the revisions its pods run, with how many of each. */
  sets: Record<string, Record<string, number>>;
  /** Restarted as a canary of the current wave. */
  canary: boolean;
  /** The health gate, for owners the current wave restarted: pending, passed or failed. */
  gate: string | undefined;
  gateDetail: string | undefined;
  state: OwnerState;
  /** What the controller does about it now, and why (the wave's report). */
  action: string;
  reason: string;
  detail: string;
}

export interface FleetStatus {
  revision: string;
  /** The current revision of each sidecar set other than the proxy, in applied order. */
  sets: { name: string; revision: string }[];
  mode: Config['rollout']['mode'];
  maxConcurrent: number;
  /** Our restarts still rolling. */
  rolling: number;
  /** Why the wave is stopped, or undefined when it is not. */
  stopped: string | undefined;
  /** canary, soaking, rolling, complete, stopped, rolling-back or rolled-back. */
  stage: WaveStage;
  stageDetail: string;
  /** The last revision whose wave completed: where a rollback returns to. */
  lastGood: string | undefined;
  /** The maintenance windows, and when the next opens while they hold restarts back. */
  windows: string[];
  nextWindow: string | undefined;
  rows: FleetRow[];
}

interface PodTally extends PodCounts {
  total: number;
  running: Record<string, number>;
  sets: Record<string, Record<string, number>>;
}

const noTally = (): PodTally => ({
  total: 0,
  injected: 0,
  outdated: 0,
  escaped: 0,
  running: {},
  sets: {},
});

/** A pod label `<set>.sets.outrigger.dev/revision`: the set's name. */
const SET_LABEL = new RegExp(`^([a-z0-9-]+)\\.${SETS_PREFIX.replace(/\./g, '\\.')}/revision$`);

function tallySets(t: PodTally, labels: Readonly<Record<string, string>>): void {
  for (const [key, revision] of Object.entries(labels)) {
    const set = SET_LABEL.exec(key)?.[1];
    if (set === undefined) continue;
    const of = (t.sets[set] ??= {});
    of[revision] = (of[revision] ?? 0) + 1;
  }
}

/** The controller's counts per owner (countPodsByOwner), with every pod and its revision. */
function tallyPods(
  pods: readonly PodLike[],
  revision: string,
  names: { proxy: string; init?: string },
  restartedAt: (key: string) => number | undefined,
): Map<string, PodTally> {
  return countPodsByOwner(pods, {
    revision,
    names,
    sinceOf: restartedAt,
    fresh: noTally,
    also: (t, pod) => {
      t.total += 1;
      const runs = pod.metadata?.labels?.[REVISION];
      if (runs !== undefined) t.running[runs] = (t.running[runs] ?? 0) + 1;
      tallySets(t, pod.metadata?.labels ?? {});
    },
  });
}

export function fleetStatus(input: FleetInput): FleetStatus {
  const namespaces = new Map(input.namespaces.map((n) => [n.name, n]));
  // The gate counts the proxy's restarts since the wave restarted the owner only.
  const restarts = new Map(
    input.workloads.map(({ kind, object }) => [
      ownerKey({
        namespace: object.metadata?.namespace ?? '',
        kind,
        name: object.metadata?.name ?? '',
      }),
      parseTime(object.metadata?.annotations?.[RESTARTED_AT]),
    ]),
  );
  const tallies = tallyPods(
    input.pods,
    input.revision,
    injectedContainerNames(input.config),
    (key) => restarts.get(key),
  );
  const owners = input.workloads.flatMap(({ kind, object }) => {
    const workload = asWorkload(object, kind);
    const namespace = namespaces.get(object.metadata?.namespace ?? '');
    if (!workload || !namespace) return [];
    const key = ownerKey({ namespace: namespace.name, kind, name: object.metadata?.name ?? '' });
    const tally = tallies.get(key) ?? noTally();
    const assessment = assessOwner({
      workload,
      namespace,
      config: input.config,
      revision: input.revision,
      pods: tally,
      nowMs: input.nowMs,
      systemNamespace: input.systemNamespace,
    });
    return [{ workload, tally, assessment }];
  });
  const plan = planWave({
    owners: owners.map((o) => o.assessment),
    revision: input.revision,
    rollout: input.config.rollout,
    wave: readWave(input.configMapAnnotations),
    nowMs: input.nowMs,
  });
  const byKey = new Map(owners.map((o) => [ownerKey(o.assessment.owner), o]));
  const rows = plan.report
    .filter((e) => e.state !== 'not-enabled')
    .map((e): FleetRow => {
      const o = byKey.get(ownerKey(e.owner));
      const tally = o?.tally ?? noTally();
      return {
        ...e.owner,
        injected: tally.injected,
        pods: tally.total,
        revision: o ? readStamp(o.workload)?.revision : undefined,
        running: tally.running,
        sets: tally.sets,
        canary: e.canary,
        gate: e.gate?.state,
        gateDetail: e.gate?.detail,
        state: e.state,
        action: e.action,
        reason: e.reason,
        detail: e.detail,
      };
    });
  const wave = readWave(input.configMapAnnotations);
  return {
    revision: input.revision,
    sets: appliedSets(input.config).map((a) => ({ name: a.set.name, revision: a.revision })),
    mode: input.config.rollout.mode,
    maxConcurrent: input.config.rollout.maxConcurrent,
    rolling: owners.filter((o) => o.assessment.inFlight && !o.assessment.stall).length,
    stopped: plan.stopped ? (wave.stopped?.reason ?? 'a rollout stalled') : undefined,
    stage: plan.stage,
    stageDetail: plan.stageDetail,
    lastGood: wave.lastGood,
    windows: input.config.rollout.windows.map(describeWindow),
    nextWindow: plan.nextWindowMs === undefined ? undefined : formatTime(plan.nextWindowMs),
    rows,
  };
}

/** Pods by revision, `<revision>:<pods>,...`; `-` for none. */
const byRevision = (counts: Record<string, number>): string =>
  Object.entries(counts)
    .map(([revision, n]) => `${revision}:${n}`)
    .join(',') || '-';

const running = (row: FleetRow): string => byRevision(row.running);

/** Each set's revisions on the owner's pods, `<set>=<revision>:<pods>`; `-` without sets. */
const setsCell = (row: FleetRow): string =>
  Object.entries(row.sets)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([set, revisions]) => `${set}=${byRevision(revisions)}`)
    .join(' ') || '-';

const gateCell = (row: FleetRow): string =>
  row.gate ? `${row.gate}${row.canary ? ' (canary)' : ''}` : '-';

function waveLines(status: FleetStatus): string {
  const wave = status.stopped
    ? `stopped: ${status.stopped} (resume: outrigger resume)`
    : `${status.rolling} rolling of at most ${status.maxConcurrent}`;
  const lines = [
    `revision ${status.revision}, mode ${status.mode}, wave: ${wave}`,
    ...(status.sets.length > 0
      ? [
          `sidecar sets: ${status.sets.map((s) => `${s.name} ${s.revision}`).join(', ')} (new pods get these; a change to a set alone restarts nothing yet)`,
        ]
      : []),
    `stage ${status.stage}: ${status.stageDetail}; last good revision ${status.lastGood ?? 'none yet'}`,
  ];
  if (status.windows.length > 0)
    lines.push(
      `maintenance windows ${status.windows.join('; ')}${status.nextWindow ? `; closed, the next opens at ${status.nextWindow}` : '; open now'}`,
    );
  return `${lines.join('\n')}\n`;
}

/** The table `outrigger status` prints; `wide` adds what the controller does and why. */
export function formatFleet(status: FleetStatus, wide: boolean): string {
  // The SETS column only where the configuration has sets: the table is as before without.
  const withSets = status.sets.length > 0;
  const head = ['NAMESPACE', 'KIND', 'NAME', 'INJECTED', 'PINNED', 'RUNNING', 'STATE', 'GATE'];
  if (withSets) head.splice(6, 0, 'SETS');
  const rows = status.rows.map((r) => {
    const base = [
      r.namespace,
      r.kind,
      r.name,
      `${r.injected}/${r.pods}`,
      r.revision ?? '-',
      running(r),
      ...(withSets ? [setsCell(r)] : []),
      r.state,
      gateCell(r),
    ];
    return wide ? [...base, r.action, r.reason, r.detail] : base;
  });
  const table = [wide ? [...head, 'ACTION', 'REASON', 'DETAIL'] : head, ...rows];
  const widths =
    table[0]?.map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length))) ?? [];
  const lines = table.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
  return `${lines.join('\n')}\n\n${waveLines(status)}`;
}
