// Jest global teardown of the end-to-end suites: kill processes tests left running, and stop the
// local cluster if a test run started it and no other run still uses it (keeping its logs in the
// run's log folder). A cluster started by make cluster-up, or given by KUBECONFIG, stays up.

import * as path from 'node:path';
import { E2E_ENV } from './environment';
import {
  disownLocalCluster,
  downLocalCluster,
  releaseLocalCluster,
  saveClusterLogs,
} from './local-cluster';
import { logDir } from './log-dir';
import { reapLeftoverProcesses } from './process';

function note(message: string): void {
  process.stderr.write(`[e2e] ${message}\n`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

async function stopLocalCluster(stateDir: string, logs: string): Promise<void> {
  try {
    await saveClusterLogs(stateDir, path.join(logs, 'cluster'));
  } catch (error) {
    note(`could not keep the cluster's logs: ${errorText(error)}`);
  }
  await downLocalCluster();
  note(`stopped the local cluster; its logs are in ${path.join(logs, 'cluster')}`);
}

export default async function globalTeardown(): Promise<void> {
  const logs = logDir();
  for (const killed of reapLeftoverProcesses(logs)) {
    note(`killed ${killed}: a test did not stop it`);
  }
  const stateDir = process.env[E2E_ENV.localStateDir];
  if (!stateDir) return; // KUBECONFIG was given: not ours to stop
  const release = await releaseLocalCluster(stateDir);
  if (!release.stop) {
    if (release.reason === 'in use by other runs') {
      note(
        `leaving the local cluster up for the runs still using it (pids ${release.users.join(', ')})`,
      );
    }
    return;
  }
  if (process.env[E2E_ENV.keepCluster] === '1') {
    await disownLocalCluster(stateDir);
    note(`${E2E_ENV.keepCluster}=1: leaving the local cluster up (make cluster-down stops it)`);
    return;
  }
  await stopLocalCluster(stateDir, logs);
}
