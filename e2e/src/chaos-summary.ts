// The figures of the controller's chaos loop: one cycle's, and a run's summary as make chaos
// prints it.

import type { ApiServerRestart } from './disrupt';
import type { TargetHealth } from './health-watch';

export interface CycleFigures {
  cycle: number;
  revision: string;
  seconds: number;
  /** Per owner: new ReplicaSets this cycle (the Deployment's revision number moved by). */
  restarts: Record<string, number>;
  killedLeader: string;
  /** From the leader's SIGKILL until a replica leads again. */
  handoverMs: number;
  /** The Lease's leaseTransitions during the cycle. */
  leaderChanges: number;
  apiServerRestart: ApiServerRestart | undefined;
  freezeMs: number;
  /** The longest time from an owner's rollout complete to the controller recording it. */
  recordLagMs: number;
  /** Every property that failed, in words; empty when the cycle passed. */
  violations: string[];
}

/** The figures of a run, as make chaos prints them. */
export function chaosSummary(cycles: CycleFigures[], probes: TargetHealth[]): string {
  const lines: string[] = [];
  const restarts = cycles.flatMap((c) => Object.values(c.restarts));
  const counts = new Map<number, number>();
  for (const n of restarts) counts.set(n, (counts.get(n) ?? 0) + 1);
  const apiRestarts = cycles.filter((c) => c.apiServerRestart).length;
  const ms = (n: number) => `${Math.round(n)} ms`;
  if (cycles.length === 0) return `cycles: 0\n${probeLines(probes).join('\n')}`;
  lines.push(
    `cycles finished: ${cycles.length}, failed: ${cycles.filter((c) => c.violations.length).length}`,
  );
  const each = [...counts].map(([n, k]) => `${n} for ${k}`).join(', ') || 'none';
  lines.push(
    `restarts (new ReplicaSets) per owner per revision: ${each} of ${restarts.length} (owner, revision) pairs`,
  );
  lines.push(
    `leader kills: ${cycles.length}; leader changes (Lease transitions): ${cycles.reduce((s, c) => s + c.leaderChanges, 0)}; handover ${ms(Math.min(...cycles.map((c) => c.handoverMs)))} to ${ms(Math.max(...cycles.map((c) => c.handoverMs)))}`,
  );
  const readies = cycles.flatMap((c) => (c.apiServerRestart ? [c.apiServerRestart.readyMs] : []));
  lines.push(
    apiRestarts === 0
      ? 'API server restarts: 0 (skipped)'
      : `API server restarts in them: ${apiRestarts} (${cycles.filter((c) => c.apiServerRestart?.signal === 'KILL').length} by SIGKILL), down 2 s each, ready ${ms(Math.min(...readies))} to ${ms(Math.max(...readies))} after start; freezes: ${cycles.filter((c) => c.freezeMs > 0).length} of ${ms(Math.min(...cycles.map((c) => c.freezeMs)))} to ${ms(Math.max(...cycles.map((c) => c.freezeMs)))}`,
  );
  lines.push(
    `longest time from an owner's rollout complete to the controller recording it: ${ms(Math.max(...cycles.map((c) => c.recordLagMs)))} (polled every 500 ms)`,
  );
  return [...lines, ...probeLines(probes)].join('\n');
}

function probeLines(probes: TargetHealth[]): string[] {
  return [
    'longest time without an answer to /healthz, per replica:',
    ...probes.map(
      (p) =>
        `  ${p.name.padEnd(22)} ${`${p.longestGapMs} ms`.padStart(8)}  (${p.answered} of ${p.probes} probes answered${p.probing ? '' : ', then killed'})`,
    ),
  ];
}
