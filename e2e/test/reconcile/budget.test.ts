// The reconciler behind a real API server (a configuration change rolls a wave within its budget): e2e/src/reconcile-suite.ts has the
// install these suites share.

import {
  apply,
  deploymentYaml,
  waitForRollout,
  RollingTimeline,
  reconcileConfigYaml,
  revisionOf,
  useReconcileSuite,
} from '../../src';

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: a configuration change rolls a wave within its budget', () => {
  let revision = suite.firstRevision;

  it('a configuration change rolls 24 owners in 4 namespaces, never more than maxConcurrent at once', async () => {
    const namespaces = await Promise.all(
      [1, 2, 3, 4].map((i) => install.newNamespace(`r3-wave${i}`, { optedIn: true })),
    );
    await suite.scenario(namespaces, async () => {
      for (const ns of namespaces) await suite.optInLabelled(ns);
      const names = ['a', 'b', 'c', 'd', 'e', 'f'];
      for (const ns of namespaces)
        await apply(cluster, names.map((n) => deploymentYaml(n)).join('---\n'), { namespace: ns });
      await suite.waitForPodsAt(namespaces, revision, 24);
      // Settled first: the watch starts with every Deployment as it is now.
      for (const ns of namespaces)
        for (const n of names)
          await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: n });

      const timeline = new RollingTimeline(cluster, new Set(namespaces));
      await timeline.start();
      const yaml = reconcileConfigYaml(1, 3);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      await suite.waitForRestarted(namespaces, revision, 24);
      await suite.waitForPodsAt(namespaces, revision, 24);
      timeline.stop();

      expect(timeline.ended).toBeUndefined();
      expect(new Set(timeline.starts).size).toBe(24);
      // The budget is used (the first step starts three) and never exceeded; on failure the
      // message shows every transition up to the moment the most were rolling.
      expect(`${timeline.maxRolling} rolling at once at most:\n${timeline.timelineToMax}`).toMatch(
        /^3 rolling at once at most/,
      );
      for (const ns of namespaces)
        for (const n of names) expect(await suite.replicaSetsOf(ns, n)).toHaveLength(2);
    });
  }, 300_000);
});
