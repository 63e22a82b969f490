// The controller's chaos loop, short: two cycles of e2e/src/chaos.ts,
// each a new revision rolled over six Deployments by two controller replicas while the leader
// is killed with SIGKILL, the API server is restarted and frozen, and a policy refuses one
// owner for part of the wave. Every owner must end on the revision with exactly one new
// ReplicaSet, no replica may go 2 s without answering /healthz, and none may exit by itself.
// make chaos runs the same loop for ten minutes. On a cluster given by KUBECONFIG, or a local
// one that other runs share, the API server is left alone (one line says so).

import { appendFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  buildWorkspace,
  ChaosLoop,
  connect,
  disruptableApiServer,
  dumpingOnFailure,
  logDir,
  stopAllProcesses,
  type Cluster,
  type CycleFigures,
} from '../src';

const CYCLES = 2;
const cluster: Cluster = connect();
const chaosLog = path.join(logDir(), 'chaos.log');
let loop: ChaosLoop;

beforeAll(async () => {
  await Promise.all([buildWorkspace('webhook'), buildWorkspace('controller')]);
  const disruptable = await disruptableApiServer();
  if ('skip' in disruptable) {
    console.warn(`chaos: API server restarts and freezes skipped: ${disruptable.skip}`);
  }
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000);
  appendFileSync(chaosLog, `seed ${seed}\n`);
  loop = new ChaosLoop({
    cluster,
    apiServer: 'server' in disruptable ? disruptable.server : undefined,
    seed,
    minReadySeconds: 5,
    log: (line) => appendFileSync(chaosLog, `${new Date().toISOString()} ${line}\n`),
  });
  await loop.setup();
}, 240_000);

afterAll(async () => {
  await loop.teardown();
  await stopAllProcesses();
  await cluster.close();
}, 60_000);

describe('the controller under chaos', () => {
  it(`${CYCLES} cycles of leader kills, API server restarts and freezes, and a refused owner: every owner ends on each revision, restarted once, and every replica answers`, async () => {
    const cycles: CycleFigures[] = [];
    await dumpingOnFailure(cluster, [loop.namespace, loop.install.system], async () => {
      for (let i = 0; i < CYCLES; i++) {
        const figures = await loop.runCycle();
        cycles.push(figures);
        expect(figures.violations).toEqual([]);
        expect(figures.restarts).toEqual(Object.fromEntries(loop.owners.map((o) => [o, 1])));
        expect(figures.leaderChanges).toBeGreaterThanOrEqual(1);
      }
    });
    const probes = await loop.probes();
    // Every replica was probed, and answered, many times: the absence of a long gap means
    // something only after that.
    for (const p of probes) expect(p.answered).toBeGreaterThan(10);
    expect(loop.unexpectedExits).toEqual([]);
  }, 900_000);
});
