// The local control plane's API server, disturbed on purpose for the controller's chaos loop
// (e2e/cluster/disrupt.sh does the work): restarted with the flags it ran with, or frozen for a
// few seconds (SIGSTOP, then SIGCONT; its open watches go silent). Only the local cluster of
// e2e/cluster can be disturbed, and only while no other test run uses it.

import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import * as path from 'node:path';
import { E2E_ENV, isLocalCluster } from './environment';
import { apiServerIdentity } from './local-cluster';
import { clusterScriptsDir, localClusterStateDir } from './paths';
import { isRunning } from './proc-fs';

export interface ApiServerRestart {
  /** From the signal to the process's exit. */
  stoppedMs: number;
  /** Left down for. */
  downMs: number;
  /** From the new process's start to /readyz answering. */
  readyMs: number;
  signal: 'TERM' | 'KILL';
}

/** Runs e2e/cluster/disrupt.sh; resolves with its stdout, rejects with its stderr's tail. */
function disrupt(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    // Its own session: a freeze still ends with SIGCONT if this process dies meanwhile.
    const child = spawn('bash', [path.join(clusterScriptsDir, 'disrupt.sh'), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', reject);
    child.once('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else {
        const how = signal ?? `exit code ${String(code)}`;
        const tail = stderr.trimEnd().split('\n').slice(-15).join('\n');
        reject(new Error(`e2e/cluster/disrupt.sh ${args.join(' ')} failed (${how}):\n${tail}`));
      }
    });
  });
}

/** The local cluster's kube-apiserver, which this run may restart and freeze. */
export class LocalApiServer {
  constructor(readonly stateDir: string) {}

  /** "<pid>@<start time>" of the running process, or undefined. */
  identity(): Promise<string | undefined> {
    return apiServerIdentity(this.stateDir);
  }

  /** Stops it, leaves it down for `downMs`, starts it with the same flags, waits for /readyz. */
  async restart(options: { downMs: number; signal: 'TERM' | 'KILL' }): Promise<ApiServerRestart> {
    const before = await this.identity();
    const out = await disrupt([
      'restart',
      'kube-apiserver',
      String(options.downMs / 1000),
      options.signal,
    ]);
    const figure = (name: string): number => Number(new RegExp(`${name}=(\\d+)`).exec(out)?.[1]);
    const after = await this.identity();
    if (after === undefined || after === before) {
      throw new Error(`the API server was not restarted (before ${before}, after ${after})`);
    }
    return {
      stoppedMs: figure('stopped_ms'),
      downMs: options.downMs,
      readyMs: figure('ready_ms'),
      signal: options.signal,
    };
  }

  /** SIGSTOP for `ms`, then SIGCONT (also if this process dies meanwhile). */
  async freeze(ms: number): Promise<void> {
    await disrupt(['freeze', 'kube-apiserver', String(ms / 1000)]);
  }
}

/** Other live test runs registered on the local cluster (local-cluster.ts's e2e-runs). */
async function otherRuns(stateDir: string): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir(path.join(stateDir, 'e2e-runs'));
  } catch {
    return [];
  }
  return entries
    .map(Number)
    .filter((pid) => Number.isInteger(pid) && pid !== process.pid && isRunning(pid));
}

/**
 * The API server this run may disturb, or why not: a cluster given by KUBECONFIG is not ours
 * to restart, and a local cluster other runs use would fail their tests.
 */
export async function disruptableApiServer(): Promise<
  { server: LocalApiServer } | { skip: string }
> {
  if (!isLocalCluster()) {
    return { skip: 'KUBECONFIG names an external cluster: its API server is not ours to restart' };
  }
  const stateDir = process.env[E2E_ENV.localStateDir] || localClusterStateDir();
  if ((await apiServerIdentity(stateDir)) === undefined) {
    return { skip: `no kube-apiserver of e2e/cluster runs for ${stateDir}` };
  }
  const others = await otherRuns(stateDir);
  if (others.length > 0) {
    return {
      skip: `other test runs use the local cluster (pids ${others.join(', ')}): restarting its API server would fail them`,
    };
  }
  return { server: new LocalApiServer(stateDir) };
}
