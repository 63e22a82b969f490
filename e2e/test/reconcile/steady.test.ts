// The reconciler behind a real API server (a steady cluster): e2e/src/reconcile-suite.ts has the
// install these suites share.

import {
  apply,
  controllerCaughtUp,
  done,
  metricSamples,
  metricSum,
  nudgeDeployment,
  pending,
  threeKindsYaml,
  waitFor,
  waitForRollout,
  useReconcileSuite,
} from '../../src';

const threeKinds = threeKindsYaml(2);

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: a steady cluster', () => {
  const revision = suite.firstRevision;

  it('a steady cluster: for 20 changes that decide nothing and at least 20 s, the controller writes nothing', async () => {
    const ns = await install.newNamespace('r7-steady', { optedIn: true });
    await suite.scenario([ns], async () => {
      await suite.optInLabelled(ns);
      await apply(cluster, threeKinds, { namespace: ns });
      const ds = await waitForRollout(cluster, { kind: 'DaemonSet', namespace: ns, name: 'agent' });
      await suite.waitForPodsAt([ns], revision, 4 + (ds.status?.desiredNumberScheduled ?? 0));
      await waitFor('the controller to count the three owners as current', async () => {
        const states = await metricSamples(
          suite.controller.metricsPort,
          'outrigger_controller_owners',
        );
        return (states.get('{state="current"}') ?? 0) >= 3 ? done(undefined) : pending(states);
      });
      const port = suite.controller.metricsPort;
      await controllerCaughtUp(port, 'deployments', nudgeDeployment(cluster, ns, 'web'));
      const before = await metricSum(port, 'outrigger_controller_writes_total');
      // Round after round, the controller sees the Deployment change (an annotation of the
      // test's own) and settles each time: no step it takes writes. Twenty rounds, and no fewer
      // than 20 s: four times the heal back-off, the shortest timer of this configuration.
      const start = Date.now();
      let rounds = 0;
      while (rounds < 20 || Date.now() - start < 20_000) {
        await controllerCaughtUp(port, 'deployments', nudgeDeployment(cluster, ns, 'web'));
        rounds++;
      }
      const after = await metricSum(port, 'outrigger_controller_writes_total');
      const seen = `${rounds} rounds in ${Date.now() - start} ms`;
      expect({ seen, writes: after - before }).toEqual({ seen, writes: 0 });
      expect(await metricSum(suite.controller.metricsPort, 'outrigger_controller_leader')).toBe(1);
    });
  }, 150_000);
});
