// The baselines of the controller's first steady state: the API server's own time to hand over
// what the controller has to read, measured as raw lists (JSON, parsed) with no client around.

import { request } from 'node:https';
import { ESCAPED_POD_SELECTOR, REVISION } from '@outrigger/shared';
import { quantile } from '@outrigger/testkit';
import type { Cluster } from '../src';

/** One list at `path` (with its query), as JSON, parsed: milliseconds. */
async function rawList(cluster: Cluster, path: string): Promise<number> {
  const server = cluster.kubeConfig.getCurrentCluster()?.server ?? '';
  const options: Parameters<typeof request>[1] = { method: 'GET' };
  await cluster.kubeConfig.applyToHTTPSOptions(options);
  const start = performance.now();
  const text = await new Promise<string>((resolve, reject) => {
    const req = request(`${server}${path}`, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  (JSON.parse(text) as { items: unknown[] }).items.forEach(() => undefined);
  return performance.now() - start;
}

const selected = (selector: string): string => `?labelSelector=${encodeURIComponent(selector)}`;

/**
 * Every list the controller makes before its first steady state, at once as it makes them: the
 * three workload kinds, the namespaces, and its two pod selections (escaped pods, and injected
 * pods on a revision other than `revision`).
 */
function everyList(revision: string): string[] {
  return [
    '/apis/apps/v1/deployments',
    '/apis/apps/v1/statefulsets',
    '/apis/apps/v1/daemonsets',
    '/api/v1/namespaces',
    `/api/v1/pods${selected(ESCAPED_POD_SELECTOR)}`,
    `/api/v1/pods${selected(`${REVISION},${REVISION}!=${revision}`)}`,
  ];
}

export interface ListBaselines {
  /** Median of five lists of every Deployment. */
  deploymentsMs: number;
  /** Median of five rounds of every list the controller makes, in parallel. */
  everyListMs: number;
}

export async function listBaselines(cluster: Cluster, revision: string): Promise<ListBaselines> {
  const deployments: number[] = [];
  const every: number[] = [];
  for (let i = 0; i < 5; i++) {
    deployments.push(await rawList(cluster, '/apis/apps/v1/deployments'));
    const start = performance.now();
    await Promise.all(everyList(revision).map((path) => rawList(cluster, path)));
    every.push(performance.now() - start);
  }
  return { deploymentsMs: quantile(deployments, 0.5), everyListMs: quantile(every, 0.5) };
}
