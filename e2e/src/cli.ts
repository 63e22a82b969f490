// The outrigger CLI as an admin runs it against a test install: the admin kubeconfig and the
// install's configuration ConfigMap.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CONFIG_MAP_NAME } from '@outrigger/shared';
import { kubeconfigPath } from './environment';
import type { TestInstall } from './install';
import { repoRoot } from './paths';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');

/** The flags that point the CLI at a test install. */
export const cliFlags = (install: TestInstall): string[] => [
  '--kubeconfig',
  kubeconfigPath(),
  '--config-map',
  `${install.system}/${CONFIG_MAP_NAME}`,
];

/** Runs `outrigger ARGS` against the install; a non-zero exit is returned, not thrown. */
export async function outriggerCli(
  install: TestInstall,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [CLI, ...args, ...cliFlags(install)]);
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}
