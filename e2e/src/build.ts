// Building a workspace before a test starts its binary (webhook/bin, controller/bin run the
// compiled dist/), so a suite always runs the code in src/, never a stale build.

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { repoRoot } from './paths';

/**
 * `tsc -b <workspace>` from the repository root: incremental, about a second when nothing
 * changed. Throws with the compiler's output when the workspace does not compile.
 */
export async function buildWorkspace(workspace: string): Promise<void> {
  const tsc = require.resolve('typescript/bin/tsc');
  try {
    await promisify(execFile)(process.execPath, [tsc, '-b', workspace], { cwd: repoRoot });
  } catch (error) {
    const output =
      typeof error === 'object' && error !== null && 'stdout' in error ? String(error.stdout) : '';
    throw new Error(
      `tsc -b ${workspace} failed, so its binary cannot be tested:\n${output || String(error)}`,
      { cause: error },
    );
  }
}
