// What make demo prints: its steps with the time since it started, `outrigger status`, and the
// wave followed owner by owner until every one is current.

import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  REVISION,
  SYSTEM_NAMESPACE,
  makeSnapshot,
  mustParseConfig,
} from '@outrigger/shared';
import { done, pending, repoRoot, waitFor, type Cluster } from '../src';

const run = promisify(execFile);
const CLI = path.join(repoRoot, 'cli', 'bin', 'outrigger.js');
const started = Date.now();

/** One step of the demo, with the seconds since it started. */
export function say(text: string): void {
  const at = ((Date.now() - started) / 1000).toFixed(0).padStart(3);
  process.stdout.write(`\n[${at}s] ${text}\n`);
}

export function secondsSinceStart(): string {
  return ((Date.now() - started) / 1000).toFixed(0);
}

export async function outriggerStatus(namespace: string, ...more: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, 'status', '-n', namespace, ...more]);
  return stdout;
}

interface StatusJson {
  rows: {
    kind: string;
    name: string;
    state: string;
    revision?: string;
    injected: number;
    pods: number;
  }[];
  /** canary, soaking, rolling, complete... */
  stage: string;
}

/** Prints each change of the owners' states until every one is current at `revision`. */
export async function followWave(namespace: string, revision: string): Promise<void> {
  let last = '';
  await waitFor(
    'the wave to finish',
    async () => {
      const { rows, stage } = JSON.parse(
        await outriggerStatus(namespace, '-o', 'json'),
      ) as StatusJson;
      const line = `${stage}: ${rows
        .map((r) => `${r.kind}/${r.name} ${r.state} ${r.injected}/${r.pods}`)
        .join(', ')}`;
      if (line !== last) process.stdout.write(`  wave: ${line}\n`);
      last = line;
      const finished = rows.every((r) => r.state === 'current' && r.revision === revision);
      return finished ? done(undefined) : pending(line);
    },
    { timeoutMs: 180_000, intervalMs: 200 },
  );
}

/** Waits until every live pod of the namespace was injected at `revision`. */
export async function podsAt(cluster: Cluster, namespace: string, revision: string): Promise<void> {
  await waitFor(
    `every pod in ${namespace} injected at revision ${revision}`,
    async () => {
      const { items } = await cluster.core.listNamespacedPod({ namespace });
      const live = items.filter((p) => !p.metadata?.deletionTimestamp);
      const behind = live.filter((p) => p.metadata?.labels?.[REVISION] !== revision);
      return live.length > 0 && behind.length === 0 ? done(undefined) : pending(behind.length);
    },
    { timeoutMs: 180_000 },
  );
}

/** The revision of the configuration in the ConfigMap now. */
export async function currentRevision(cluster: Cluster): Promise<string> {
  const cm = await cluster.core.readNamespacedConfigMap({
    namespace: SYSTEM_NAMESPACE,
    name: CONFIG_MAP_NAME,
  });
  return makeSnapshot(mustParseConfig(cm.data?.[CONFIG_MAP_KEY] ?? '')).revision;
}
