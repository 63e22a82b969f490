// Where `make bench-webhook` runs its parts: the load generator on one CPU, the server it
// measures on another, as an API server and a webhook run on different machines of a cluster.
// Unpinned, the two compete for the same two cores: the scheduler moves them between the cores
// and each reply wakes the client on the other one, so the throughput measures their contest as
// much as the server. Pinned, a server that cannot keep up shows it in its throughput.
// BENCH_PIN=0 leaves both to the scheduler, as the bench did before.

import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

export interface Pinning {
  /** Prefixes a server's command line so that it runs on its own CPU. */
  command: (argv: readonly string[]) => string[];
  /** For the report's header. */
  description: string;
}

const LOAD_CPU = 0;
const SERVER_CPU = 1;

const unpinned = (why: string): Pinning => ({
  command: (argv) => [...argv],
  description: `not pinned (${why}): the load generator and the server share every CPU`,
});

/** Pins this process (the load generator, every thread) to one CPU, if it can. */
export function pinLoadGenerator(env: NodeJS.ProcessEnv = process.env): Pinning {
  if (env.BENCH_PIN === '0') return unpinned('BENCH_PIN=0');
  if (availableParallelism() < 2) return unpinned('one CPU only');
  const pinned = spawnSync('taskset', ['-a', '-c', '-p', String(LOAD_CPU), String(process.pid)], {
    encoding: 'utf8',
  });
  if (pinned.error || pinned.status !== 0)
    return unpinned(`taskset failed: ${pinned.error?.message ?? pinned.stderr.trim()}`);
  return {
    command: (argv) => ['taskset', '-c', String(SERVER_CPU), ...argv],
    description: `load generator on CPU ${LOAD_CPU}, each server on CPU ${SERVER_CPU} (BENCH_PIN=0 to share them)`,
  };
}
