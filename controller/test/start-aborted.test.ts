// A controller told to stop while its first lists still wait for an API server out of reach ends
// its start at once, instead of waiting for the API server or the grace that follows a signal.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@outrigger/testkit';
import { parseFlags } from '../src/flags';
import { silentLogger } from '../src/log';
import { startController } from '../src/main';
import { ControllerMetrics } from '../src/metrics';

/** A kubeconfig whose API server refuses every connection (port 1 on 127.0.0.1). */
function unreachableKubeconfig(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'outrigger-start-')), 'kubeconfig');
  writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters: [{name: down, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]',
      'users: [{name: u, user: {token: x}}]',
      'contexts: [{name: c, context: {cluster: down, user: u}}]',
      'current-context: c',
      '',
    ].join('\n'),
  );
  return file;
}

it('ends a start aborted while the watches list, stopping what it started', async () => {
  const flags = parseFlags([
    '--kubeconfig',
    unreachableKubeconfig(),
    '--namespace',
    'outrigger-system',
    '--metrics-listen',
    '127.0.0.1:0',
  ]);
  const abort = new AbortController();
  const metrics = new ControllerMetrics();
  const started = startController(flags, { logger: silentLogger(), metrics }, abort.signal);
  // Abort while the watches list: once a list has failed against the API server and its watch
  // is waiting to try again.
  await waitFor('a watch to restart after a failed list', async () =>
    (await metrics.watchRestarts.get()).values.some((v) => v.value > 0),
  );
  abort.abort();
  await expect(started).rejects.toThrow('stopped before every watch had listed');
});
