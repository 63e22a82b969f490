// Jest global teardown of the end-to-end suites: kill processes tests left running, and stop the
// local cluster if global setup started it (keeping its logs in the run's log folder).

import * as path from 'node:path';
import { E2E_ENV } from './environment';
import { downLocalCluster, saveClusterLogs } from './local-cluster';
import { logDir } from './log-dir';
import { localClusterStateDir } from './paths';
import { reapLeftoverProcesses } from './process';

function note(message: string): void {
  process.stderr.write(`[e2e] ${message}\n`);
}

export default async function globalTeardown(): Promise<void> {
  const logs = logDir();
  for (const killed of reapLeftoverProcesses(logs)) {
    note(`killed ${killed}: a test did not stop it`);
  }
  if (process.env[E2E_ENV.startedCluster] !== '1') return;
  if (process.env[E2E_ENV.keepCluster] === '1') {
    note(`${E2E_ENV.keepCluster}=1: leaving the local cluster up (make cluster-down stops it)`);
    return;
  }
  const kubeconfig = process.env[E2E_ENV.kubeconfig];
  const stateDir = kubeconfig ? path.dirname(kubeconfig) : localClusterStateDir();
  try {
    await saveClusterLogs(stateDir, path.join(logs, 'cluster'));
  } catch (error) {
    note(
      `could not keep the cluster's logs: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  await downLocalCluster();
  note(`stopped the local cluster; its logs are in ${path.join(logs, 'cluster')}`);
}
