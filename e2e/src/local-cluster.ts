// The local control plane of e2e/cluster, as global setup and teardown drive it: up.sh, telling a
// cluster a test run started from one a developer left up (make cluster-up), and down.sh once
// the last run using a cluster that test runs started is done.
//
// Several runs may share the cluster (two people, or two terminals, running make e2e): each run
// registers in <state>/e2e-runs/<pid>; a cluster started by a run carries <state>/e2e-started.
// A run's teardown removes its registration and stops the cluster only if it carries that
// marker and no other live run is registered. A cluster started by make cluster-up is never
// stopped by a run.

import { spawn } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { clusterScriptsDir, localClusterStateDir } from './paths';
import { isRunning, processIdentity } from './proc-fs';

const RUNS = 'e2e-runs';
const STARTED_BY_A_RUN = 'e2e-started';

export interface LocalCluster {
  /** The admin kubeconfig up.sh printed. */
  kubeconfig: string;
  stateDir: string;
  /** False when the cluster was already up before (then it is left running). */
  startedHere: boolean;
}

/**
 * Which kube-apiserver process serves the cluster in `stateDir` ("<pid>@<start time>"), or
 * undefined when none runs. A restart gives a new identity, so comparing it before and after
 * up.sh tells "already up" from "started (or restarted) now" without parsing up.sh's messages.
 */
export async function apiServerIdentity(stateDir: string): Promise<string | undefined> {
  let pid: number;
  try {
    pid = Number((await readFile(path.join(stateDir, 'run', 'kube-apiserver.pid'), 'utf8')).trim());
  } catch {
    return undefined;
  }
  return Number.isInteger(pid) && pid > 0 ? processIdentity(pid) : undefined;
}

/** Runs a script of e2e/cluster with its progress on our stderr; resolves with its stdout. */
function runScript(script: string, args: string[] = []): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [path.join(clusterScriptsDir, script), ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.once('error', reject);
    // 'close', not 'exit': stdout is complete only then.
    child.once('close', (code, signal) => {
      const how = signal ?? `exit code ${String(code)}`;
      if (code === 0) resolve(stdout);
      else reject(new Error(`e2e/cluster/${script} failed (${how}); its messages are above`));
    });
  });
}

/** Records this test run as a user of the cluster (and, if it started it, that a run did). */
async function register(stateDir: string, startedHere: boolean): Promise<void> {
  await mkdir(path.join(stateDir, RUNS), { recursive: true });
  await writeFile(path.join(stateDir, RUNS, String(process.pid)), `${new Date().toISOString()}\n`);
  if (startedHere) await writeFile(path.join(stateDir, STARTED_BY_A_RUN), `${process.pid}\n`);
}

/** Brings the local cluster up with up.sh (a no-op when it is already up) and registers this run. */
export async function upLocalCluster(): Promise<LocalCluster> {
  const stateDir = localClusterStateDir();
  const before = await apiServerIdentity(stateDir);
  const stdout = await runScript('up.sh');
  const kubeconfig = stdout.trim().split('\n').pop()?.trim();
  if (!kubeconfig) throw new Error('e2e/cluster/up.sh printed no kubeconfig path');
  if (path.dirname(kubeconfig) !== stateDir) {
    // Not where we looked: we cannot tell who started it, so leave it running.
    console.warn(`up.sh used ${path.dirname(kubeconfig)}, not ${stateDir}: leaving the cluster up`);
    return { kubeconfig, stateDir: path.dirname(kubeconfig), startedHere: false };
  }
  const after = await apiServerIdentity(stateDir);
  const startedHere = before === undefined || before !== after;
  await register(stateDir, startedHere);
  return { kubeconfig, stateDir, startedHere };
}

/** Other live test runs registered as users of the cluster. */
async function otherUsers(stateDir: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir(path.join(stateDir, RUNS));
  } catch {
    return [];
  }
  const pids = entries.map(Number).filter((pid) => Number.isInteger(pid) && pid !== process.pid);
  return pids.filter((pid) => isRunning(pid));
}

export type Release =
  | { stop: true }
  | { stop: false; reason: 'started outside the tests' | 'in use by other runs'; users: number[] };

/**
 * Ends this run's use of the cluster: says whether it should now be stopped (a test run started
 * it and no other live run uses it).
 */
export async function releaseLocalCluster(stateDir: string): Promise<Release> {
  await rm(path.join(stateDir, RUNS, String(process.pid)), { force: true });
  const users = await otherUsers(stateDir);
  let startedByARun = true;
  try {
    await readFile(path.join(stateDir, STARTED_BY_A_RUN));
  } catch {
    startedByARun = false;
  }
  if (!startedByARun) return { stop: false, reason: 'started outside the tests', users };
  if (users.length > 0) return { stop: false, reason: 'in use by other runs', users };
  return { stop: true };
}

/** Stops the local cluster and removes its state (down.sh). */
export async function downLocalCluster(): Promise<void> {
  await runScript('down.sh');
}

/** From now on the cluster counts as started outside the tests: no run stops it. */
export async function disownLocalCluster(stateDir: string): Promise<void> {
  await rm(path.join(stateDir, STARTED_BY_A_RUN), { force: true });
}

/** Copies the components' logs (down.sh deletes them) into `destination`. */
export async function saveClusterLogs(stateDir: string, destination: string): Promise<void> {
  await cp(path.join(stateDir, 'logs'), destination, { recursive: true });
}
