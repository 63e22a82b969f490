// Where `make bench-webhook` runs its parts: the load generator on one CPU, the server it
// measures on another, as an API server and a webhook run on different machines of a cluster.
// Unpinned, the two compete for the same two cores: the scheduler moves them between the cores
// and each reply wakes the client on the other one, so the throughput measures their contest as
// much as the server. Pinned, a server that cannot keep up shows it in its throughput.
// BENCH_PIN=0 leaves both to the scheduler, as the bench did before.

import { spawnSync } from 'node:child_process';

export interface Pinning {
  /** Prefixes a server's command line so that it runs on its own CPU. */
  command: (argv: readonly string[]) => string[];
  /** For the report's header. */
  description: string;
}

const unpinned = (why: string): Pinning => ({
  command: (argv) => [...argv],
  description: `not pinned (${why}): the load generator and the server share every CPU`,
});

/** The CPUs this process may run on, from taskset's `current affinity list: 0,2-3`. */
export function affinityList(output: string): number[] {
  const list = /affinity list:\s*([\d,-]+)/.exec(output)?.[1] ?? '';
  if (list === '') return [];
  return list.split(',').flatMap((part) => {
    const [from, to] = part.split('-').map(Number);
    const last = to ?? from;
    if (from === undefined || last === undefined) return [];
    if (!Number.isInteger(from) || !Number.isInteger(last)) return [];
    return Array.from({ length: Math.max(0, last - from + 1) }, (_, i) => from + i);
  });
}

/** Runs taskset: its output, or why it failed. */
function taskset(args: string[]): { out: string } | { failed: string } {
  const run = spawnSync('taskset', args, { encoding: 'utf8' });
  if (run.error) return { failed: `taskset failed: ${run.error.message}` };
  if (run.status !== 0) return { failed: `taskset failed: ${run.stderr.trim()}` };
  return { out: run.stdout };
}

/**
 * Pins this process (the load generator, every thread) to the first CPU it may use and gives
 * servers the second, if there are two.
 */
export function pinLoadGenerator(env: NodeJS.ProcessEnv = process.env): Pinning {
  if (env.BENCH_PIN === '0') return unpinned('BENCH_PIN=0');
  const pid = String(process.pid);
  const current = taskset(['-c', '-p', pid]);
  if ('failed' in current) return unpinned(current.failed);
  const [load, server] = affinityList(current.out);
  if (load === undefined || server === undefined) return unpinned('one CPU only');
  const pinned = taskset(['-a', '-c', '-p', String(load), pid]);
  if ('failed' in pinned) return unpinned(pinned.failed);
  return {
    command: (argv) => ['taskset', '-c', String(server), ...argv],
    description: `load generator on CPU ${load}, each server on CPU ${server} (BENCH_PIN=0 to share them)`,
  };
}
