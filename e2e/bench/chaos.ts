// make chaos: the controller's chaos loop of e2e/src/chaos.ts for
// CHAOS_MINUTES (default 10) on the local control plane (or the cluster of KUBECONFIG, where
// the API server is left alone). Each cycle: a new revision, the leader SIGKILLed, the API server
// restarted and frozen, one owner refused for part of the wave. Prints each cycle and the
// figures at the end; exits 1 when a property failed in any cycle, or a cycle could not finish.
// CHAOS_SEED replays a run's choices; CHAOS_OWNERS and CHAOS_MIN_READY_SECONDS shape the wave.

import {
  chaosSummary,
  ChaosLoop,
  connect,
  disruptableApiServer,
  stopAllProcesses,
  type CycleFigures,
} from '../src';
import globalSetup from '../src/global-setup';
import globalTeardown from '../src/global-teardown';

const MINUTES = Number(process.env.CHAOS_MINUTES ?? 10);
const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
const OWNERS = Number(process.env.CHAOS_OWNERS ?? 5);
const MIN_READY_SECONDS = Number(process.env.CHAOS_MIN_READY_SECONDS ?? 8);

const say = (line: string): void => void process.stdout.write(`${line}\n`);

/** What the run saw: the cycles that finished, and why the loop ended early, if it did. */
interface Outcome {
  cycles: CycleFigures[];
  unexpectedExits: string[];
  broken: string | undefined;
}

async function runFor(loop: ChaosLoop): Promise<Outcome> {
  const cycles: CycleFigures[] = [];
  try {
    await loop.setup();
    // CHAOS_MINUTES of cycles, the setup not counted; at least one cycle, however short.
    const first = performance.now();
    do cycles.push(await loop.runCycle());
    while (performance.now() - first < MINUTES * 60_000);
    return { cycles, unexpectedExits: loop.unexpectedExits, broken: undefined };
  } catch (error) {
    const broken = error instanceof Error ? (error.stack ?? error.message) : String(error);
    return { cycles, unexpectedExits: loop.unexpectedExits, broken };
  }
}

/** Prints why the run failed; true when it passed. */
function verdict({ cycles, unexpectedExits, broken }: Outcome): boolean {
  const failed = cycles.filter((c) => c.violations.length > 0);
  for (const c of failed) say(`cycle ${c.cycle} failed:\n  ${c.violations.join('\n  ')}`);
  if (unexpectedExits.length > 0) {
    say(`replicas that exited by themselves:\n  ${unexpectedExits.join('\n  ')}`);
  }
  if (broken) say(`a cycle could not finish: ${broken}`);
  return failed.length === 0 && unexpectedExits.length === 0 && !broken && cycles.length > 0;
}

async function run(): Promise<boolean> {
  const cluster = connect();
  const disruptable = await disruptableApiServer();
  if ('skip' in disruptable) {
    say(`chaos: API server restarts and freezes skipped: ${disruptable.skip}`);
  }
  const loop = new ChaosLoop({
    cluster,
    apiServer: 'server' in disruptable ? disruptable.server : undefined,
    seed: SEED,
    owners: OWNERS,
    minReadySeconds: MIN_READY_SECONDS,
    log: (line) => say(`[${new Date().toISOString().slice(11, 19)}] ${line}`),
  });
  say(
    `make chaos: ${MINUTES} min, seed ${SEED}, ${OWNERS + 1} Deployments (minReadySeconds ${MIN_READY_SECONDS}), maxConcurrent 2, two controller replicas`,
  );
  const began = performance.now();
  const outcome = await runFor(loop);
  const probes = await loop.probes();
  await loop.teardown();
  await cluster.close();
  say(`\nmake chaos: ${((performance.now() - began) / 60_000).toFixed(1)} min, seed ${SEED}`);
  say(chaosSummary(outcome.cycles, probes));
  return verdict(outcome);
}

async function main(): Promise<void> {
  await globalSetup();
  let passed: boolean;
  try {
    passed = await run();
  } finally {
    await stopAllProcesses();
    await globalTeardown();
  }
  say(passed ? 'make chaos: every property held' : 'make chaos: FAILED');
  process.exitCode = passed ? 0 : 1;
}

main().catch((error: unknown) => {
  process.stderr.write(
    `make chaos failed: ${error instanceof Error ? error.stack : String(error)}\n`,
  );
  process.exitCode = 1;
});
