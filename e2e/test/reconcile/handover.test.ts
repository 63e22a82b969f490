// The reconciler behind a real API server (a controller killed mid-wave): e2e/src/reconcile-suite.ts has the
// install these suites share.

import { RESTARTED_REVISION } from '@outrigger/shared';
import {
  apply,
  deploymentYaml,
  done,
  metricSum,
  pending,
  waitFor,
  annotationOf,
  reconcileConfigYaml,
  revisionOf,
  useReconcileSuite,
} from '../../src';

const DEPLOYMENT_REVISION = 'deployment.kubernetes.io/revision';

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: a controller killed mid-wave', () => {
  let revision = suite.firstRevision;

  it('a controller killed mid-wave is replaced within the lease duration and restarts no owner twice', async () => {
    const ns = await install.newNamespace('r5-handover', { optedIn: true });
    await suite.scenario([ns], async () => {
      await suite.optInLabelled(ns);
      const names = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
      await apply(cluster, names.map((n) => deploymentYaml(n, { replicas: 2 })).join('---\n'), {
        namespace: ns,
      });
      await suite.waitForPodsAt([ns], revision, 16);
      const follower = await install.startController('outrigger-controller-b');
      expect(await metricSum(follower.metricsPort, 'outrigger_controller_leader')).toBe(0);

      const yaml = reconcileConfigYaml(3, 2);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      await waitFor('two owners restarted', async () => {
        const started = (await suite.deployments(ns)).filter(
          (d) => annotationOf(d, RESTARTED_REVISION) === revision,
        );
        return started.length >= 2 ? done(undefined) : pending(started.length);
      });
      const killedAt = Date.now();
      await suite.controller.process.kill();
      await waitFor(
        'the follower to lead',
        async () =>
          (await metricSum(follower.metricsPort, 'outrigger_controller_leader')) === 1
            ? done(undefined)
            : pending('following'),
        { timeoutMs: 30_000 },
      );
      const handover = Date.now() - killedAt;
      // The Lease lasts 15 s; a follower retries every 2 s.
      expect(handover).toBeLessThanOrEqual(15_000 + 2_000 + 1_000);
      suite.controller = follower;

      await suite.waitForRestarted([ns], revision, 8);
      await suite.waitForPodsAt([ns], revision, 16);
      for (const n of names) {
        expect(await suite.replicaSetsOf(ns, n)).toHaveLength(2);
        const [d] = (await suite.deployments(ns)).filter((x) => x.metadata?.name === n);
        expect(d && annotationOf(d, DEPLOYMENT_REVISION)).toBe('2');
      }
    });
  }, 240_000);
});
