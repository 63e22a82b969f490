// The local control plane of e2e/cluster, as global setup and teardown drive it: up.sh, telling a
// cluster this run started from one a developer left up (make cluster-up), down.sh.

import { spawn } from 'node:child_process';
import { cp, readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { clusterScriptsDir, localClusterStateDir } from './paths';
import { processIdentity } from './proc-fs';

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

/** Brings the local cluster up with up.sh (a no-op when it is already up). */
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
  return { kubeconfig, stateDir, startedHere: before === undefined || before !== after };
}

/** Stops the local cluster and removes its state (down.sh). */
export async function downLocalCluster(): Promise<void> {
  await runScript('down.sh');
}

/** Copies the components' logs (down.sh deletes them) into `destination`. */
export async function saveClusterLogs(stateDir: string, destination: string): Promise<void> {
  await cp(path.join(stateDir, 'logs'), destination, { recursive: true });
}
