// What bench-controller measures at each size, and the table it prints: one column per size.

import { quantile } from '@outrigger/testkit';
import type { ListBaselines } from './list-baseline';
import type { Memory } from './process-probes';

/** The quiet window in which the steady state must make no write. */
export const QUIET_MS = 10_000;
/** One owner's status changes, each seen and reconciled before the next. */
export const ONE_OWNER_EVENTS = 60;

export interface Wave {
  firstMs: number;
  allMs: number;
  /** The wave steps' durations (ms), from the debug log. */
  steps: number[];
  /** The highest RSS sampled (every 100 ms) from the configuration change to the wave's end. */
  peakRss: number;
  after: Memory;
  afterGc: Memory;
}

export interface SizeResult {
  size: number;
  pods: number;
  createMs: number;
  settleMs: number;
  lists: ListBaselines;
  steadyMs: number;
  steady: Memory;
  steadyGc: Memory;
  quietWrites: number;
  /** Per status change of one owner: the assessment (ms), and the wave steps that followed. */
  assessed: number[];
  steps: number[];
  cpuPer1000: number;
  waves: Wave[];
}

const s = (ms: number): string => `${(ms / 1000).toFixed(2)} s`;
const mib = (bytes: number, digits = 0): string => `${(bytes / 1024 / 1024).toFixed(digits)}`;
const mem = (m: Memory): string => `${mib(m.rss)} (${mib(m.heap)})`;
const ms = (v: number): string => `${v.toFixed(2)} ms`;
const ratio = (a: number, b: number): string => `${(a / b).toFixed(1)}x`;

export function table(results: SizeResult[]): string {
  const rows: [string, (r: SizeResult) => string][] = [
    ['Deployments (pods)', (r) => `${r.size} (${r.pods})`],
    ['create them, through the webhook', (r) => s(r.createMs)],
    ['kube-controller-manager catches up, after that', (r) => s(r.settleMs)],
    ['API server: list every Deployment (median of 5)', (r) => s(r.lists.deploymentsMs)],
    ['API server: every list the controller makes', (r) => s(r.lists.everyListMs)],
    ['controller: start to first steady state', (r) => s(r.steadyMs)],
    ['  the same, in Deployment lists', (r) => ratio(r.steadyMs, r.lists.deploymentsMs)],
    ['  the same, in rounds of every list', (r) => ratio(r.steadyMs, r.lists.everyListMs)],
    ['RSS (heap) MiB at steady state', (r) => mem(r.steady)],
    ['RSS (heap) MiB at steady state, after a full GC', (r) => mem(r.steadyGc)],
    [`writes in ${QUIET_MS / 1000} s of steady state`, (r) => String(r.quietWrites)],
    [`one owner's status change: assessment p50`, (r) => ms(quantile(r.assessed, 0.5))],
    [`  p99 (of ${ONE_OWNER_EVENTS} changes)`, (r) => ms(quantile(r.assessed, 0.99))],
    [`  wave steps they caused`, (r) => String(r.steps.length)],
    ['CPU seconds per 1,000 status changes', (r) => r.cpuPer1000.toFixed(2)],
    ['configuration change to the first restart', (r) => s(r.waves[0]?.firstMs ?? NaN)],
    ['configuration change to every owner stamped', (r) => s(r.waves[0]?.allMs ?? NaN)],
    ['wave steps during the wave: p50', (r) => ms(quantile(r.waves[0]?.steps ?? [], 0.5))],
    [
      '  p99 (steps)',
      (r) => `${ms(quantile(r.waves[0]?.steps ?? [], 0.99))} (${r.waves[0]?.steps.length ?? 0})`,
    ],
    ['peak RSS MiB during the waves', (r) => r.waves.map((w) => mib(w.peakRss)).join(', ')],
    ['RSS (heap) MiB after the wave', (r) => mem(r.waves[0]?.after ?? { rss: NaN, heap: NaN })],
    [
      'RSS (heap) MiB after the wave and a full GC',
      (r) => mem(r.waves[0]?.afterGc ?? { rss: NaN, heap: NaN }),
    ],
    [
      'heap MiB after a full GC, after each wave',
      // One decimal: growth is judged against 10 % of about 20 MiB.
      (r) => r.waves.map((w) => mib(w.afterGc.heap, 1)).join(', '),
    ],
    [
      'RSS MiB after each wave (before a GC)',
      (r) => r.waves.map((w) => mib(w.after.rss)).join(', '),
    ],
    ['peak RSS MiB seen', (r) => mib(Math.max(r.steady.rss, ...r.waves.map((w) => w.peakRss)))],
  ];
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  return rows
    .map(
      ([label, cell]) =>
        `  ${label.padEnd(width)}${results.map((r) => cell(r).padStart(16)).join('')}`,
    )
    .join('\n');
}
