// Where the harness finds things: the repository, the cluster scripts, and the local
// cluster's state directory (resolved exactly as e2e/cluster/lib.sh resolves it).

import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import * as path from 'node:path';

/** The repository root: the nearest folder above this file that holds e2e/cluster/up.sh. */
export const repoRoot: string = findRepoRoot(__dirname);

/** e2e/cluster: build.sh, up.sh, down.sh, versions.env. */
export const clusterScriptsDir: string = path.join(repoRoot, 'e2e', 'cluster');

function findRepoRoot(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'e2e', 'cluster', 'up.sh'))) return dir;
    if (path.dirname(dir) === dir) {
      throw new Error(
        `cannot find the repository root (a folder with e2e/cluster/up.sh) above ${start}`,
      );
    }
  }
}

/** OUTRIGGER_CACHE, else ~/.cache/outrigger: binaries, the local cluster, e2e logs. */
export function outriggerCacheDir(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string {
  return path.resolve(cwd, env.OUTRIGGER_CACHE || path.join(homedir(), '.cache', 'outrigger'));
}

/**
 * The local cluster's state directory: OUTRIGGER_CLUSTER_DIR, else <OUTRIGGER_CACHE>/cluster,
 * else ~/.cache/outrigger/cluster; relative paths are taken from `cwd` (where up.sh runs).
 */
export function localClusterStateDir(
  env: NodeJS.ProcessEnv = process.env,
  cwd = process.cwd(),
): string {
  return path.resolve(
    cwd,
    env.OUTRIGGER_CLUSTER_DIR || path.join(outriggerCacheDir(env, cwd), 'cluster'),
  );
}
