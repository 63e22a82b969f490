// This run's folder for logs and artifacts: ~/.cache/outrigger/e2e-logs/<date>-<time>-<pid>/ by
// default (the last few runs are kept, e2e-logs/latest is the newest), or OUTRIGGER_E2E_LOG_DIR.
// Outside the repository, so neither git nor the linters ever see them.

import { existsSync, mkdirSync, readdirSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import * as path from 'node:path';
import { E2E_ENV } from './environment';
import { outriggerCacheDir } from './paths';
import { isRunning } from './proc-fs';

/** Where the run folders go when OUTRIGGER_E2E_LOG_DIR is not set. */
export function defaultLogRoot(): string {
  return path.join(outriggerCacheDir(), 'e2e-logs');
}

/** How many run folders to keep under the default root, the new one included. */
export const KEPT_RUNS = 10;

const RUN_NAME = /^\d{8}-\d{6}-(\d+)$/;

/** Run folders under `root`, oldest first. */
export function runFolders(root: string = defaultLogRoot()): string[] {
  try {
    return readdirSync(root)
      .filter((name) => RUN_NAME.test(name))
      .sort();
  } catch {
    return [];
  }
}

/** True while the test runner that made a run folder still runs (another `make e2e`). */
export function runIsActive(name: string): boolean {
  const pid = Number(RUN_NAME.exec(name)?.[1]);
  return pid === process.pid || isRunning(pid);
}

function runName(now: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  const date = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}`;
  const time = `${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`;
  return `${date}-${time}-${process.pid}`;
}

function pruneRuns(root: string, keep: number): void {
  const runs = runFolders(root);
  for (const name of runs.slice(0, Math.max(0, runs.length - keep))) {
    if (!runIsActive(name)) rmSync(path.join(root, name), { recursive: true, force: true });
  }
}

function pointLatestAt(root: string, name: string): void {
  const latest = path.join(root, 'latest');
  try {
    unlinkSync(latest);
  } catch {
    // there was no link yet
  }
  symlinkSync(name, latest);
}

/**
 * Creates this run's folder and records it in OUTRIGGER_E2E_LOG_DIR for the test files. Global
 * setup calls it; a folder already named by OUTRIGGER_E2E_LOG_DIR is used as it is.
 */
export function prepareLogDir(now: Date = new Date()): string {
  const chosen = process.env[E2E_ENV.logDir];
  if (chosen) {
    mkdirSync(chosen, { recursive: true });
    return path.resolve(chosen);
  }
  const root = defaultLogRoot();
  mkdirSync(root, { recursive: true });
  pruneRuns(root, KEPT_RUNS - 1);
  const name = runName(now);
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  pointLatestAt(root, name);
  process.env[E2E_ENV.logDir] = dir;
  return dir;
}

/** This run's log folder, or a folder inside it; created if missing. */
export function logDir(...subfolders: string[]): string {
  const root = process.env[E2E_ENV.logDir] || prepareLogDir();
  const dir = path.join(root, ...subfolders);
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A path in `dir` named `base` + `extension` that does not exist yet (base-2, base-3, ...). */
export function freshPath(dir: string, base: string, extension: string): string {
  const safe = base.replace(/[^A-Za-z0-9._-]+/g, '-');
  for (let n = 1; ; n++) {
    const candidate = path.join(dir, `${safe}${n === 1 ? '' : `-${n}`}${extension}`);
    if (!existsSync(candidate)) return candidate;
  }
}
