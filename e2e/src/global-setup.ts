// Jest global setup of the end-to-end suites: choose the cluster and tell the test files.
//  - KUBECONFIG set: use that cluster as it is (kind, k3d, a cloud); never start or stop it.
//  - otherwise: bring the local cluster up with e2e/cluster/up.sh; global teardown stops it
//    again unless it was already up before the run (make cluster-up).

import { existsSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { connect } from './cluster';
import { E2E_ENV, type ClusterKind } from './environment';
import { prepareInCluster, publishInClusterTarget } from './in-cluster';
import { upLocalCluster } from './local-cluster';
import { defaultLogRoot, prepareLogDir, runFolders, runIsActive } from './log-dir';
import { localClusterStateDir } from './paths';
import { reapLeftoverProcesses } from './process';

function note(message: string): void {
  process.stderr.write(`[e2e] ${message}\n`);
}

function sameFile(a: string, b: string): boolean {
  try {
    return realpathSync(a) === realpathSync(b);
  } catch {
    return false;
  }
}

/** Kills processes that earlier runs, killed before their teardown, left running. */
function reapEarlierRuns(): void {
  for (const run of runFolders().filter((name) => !runIsActive(name))) {
    for (const killed of reapLeftoverProcesses(path.join(defaultLogRoot(), run))) {
      note(`killed ${killed}, left running by an earlier run`);
    }
  }
}

/** KUBECONFIG may list several files; at least one must exist. */
function checkKubeconfig(value: string): void {
  if (!value.split(path.delimiter).some((file) => file && existsSync(file))) {
    throw new Error(
      `KUBECONFIG=${value} names no existing file: unset it to use the local cluster`,
    );
  }
}

function useCluster(kubeconfig: string, kind: ClusterKind): void {
  process.env[E2E_ENV.kubeconfig] = kubeconfig;
  process.env[E2E_ENV.cluster] = kind;
  process.env.KUBECONFIG = kubeconfig;
}

export default async function globalSetup(): Promise<void> {
  reapEarlierRuns();
  const logs = prepareLogDir();
  note(`logs of this run: ${logs}`);
  const given = process.env.KUBECONFIG?.trim();
  if (given) {
    checkKubeconfig(given);
    const local = sameFile(given, path.join(localClusterStateDir(), 'kubeconfig'));
    useCluster(given, local ? 'local' : 'external');
    note(`using the cluster of KUBECONFIG=${given} (${local ? 'the local one' : 'external'})`);
    await chooseInCluster();
    return;
  }
  const cluster = await upLocalCluster();
  useCluster(cluster.kubeconfig, 'local');
  process.env[E2E_ENV.localStateDir] = cluster.stateDir;
  if (cluster.startedHere) process.env[E2E_ENV.startedCluster] = '1';
  note(
    cluster.startedHere
      ? 'started the local cluster; global teardown stops it'
      : 'the local cluster was already up; it stays up unless a test run started it and no other run still uses it',
  );
  await chooseInCluster();
}

/** What the in-cluster suites run against (in-cluster.ts), said in one line. */
async function chooseInCluster(): Promise<void> {
  const cluster = connect();
  try {
    const target = await prepareInCluster(cluster);
    publishInClusterTarget(target);
    note(
      typeof target === 'string'
        ? `in-cluster suites skipped: ${target}`
        : `in-cluster suites: image ${target.image.reference}, sidecar ${target.proxyImage}`,
    );
  } finally {
    await cluster.close();
  }
}
