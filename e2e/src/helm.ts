// Helm, as the suites, the demo and the in-cluster suite run it: the pinned binary build.sh
// made, on the suites' cluster when there is one, with helm's own message when it fails.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { E2E_ENV } from './environment';
import { repoRoot } from './paths';
import { toolBin } from './versions';

const run = promisify(execFile);

/** The repository's Helm chart. */
export const CHART_DIR = path.join(repoRoot, 'manifests', 'chart');

const HELM = toolBin('helm');

/** Runs helm (on the suites' cluster when global setup chose one); resolves with its stdout. */
export async function helm(...args: string[]): Promise<string> {
  const kubeconfig = process.env[E2E_ENV.kubeconfig];
  try {
    const { stdout } = await run(HELM, kubeconfig ? [...args, '--kubeconfig', kubeconfig] : args, {
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`helm ${args.slice(0, 2).join(' ')} failed: ${stderr || String(error)}`, {
      cause: error,
    });
  }
}
