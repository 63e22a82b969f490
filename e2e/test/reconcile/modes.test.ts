// The reconciler behind a real API server (the rollout modes): e2e/src/reconcile-suite.ts has the
// install these suites share.

import { RESTARTED_REVISION } from '@outrigger/shared';
import {
  apply,
  deploymentYaml,
  done,
  pending,
  waitFor,
  annotationOf,
  reconcileConfigYaml,
  revisionOf,
  useReconcileSuite,
} from '../../src';

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: the rollout modes', () => {
  let revision = suite.firstRevision;

  it('dry-run and manual restart nothing; auto then rolls the same revision', async () => {
    const ns = await install.newNamespace('r46-modes', { optedIn: true });
    await suite.scenario([ns], async () => {
      await suite.optInLabelled(ns);
      await apply(cluster, deploymentYaml('held'), { namespace: ns });
      await suite.waitForPodsAt([ns], revision, 1);
      const logFrom = suite.controller.process.outputSize();

      // The same revision in each mode: the mode is not part of it.
      const dryRun = reconcileConfigYaml(5, 3, 'dry-run');
      revision = revisionOf(dryRun);
      expect(revisionOf(reconcileConfigYaml(5, 3, 'manual'))).toBe(revision);
      await install.setConfig(dryRun);
      await waitFor('the controller to log what it would restart', () =>
        suite.controller.process.output(logFrom).includes(`"owner":"${ns}/Deployment/held"`) &&
        suite.controller.process.output(logFrom).includes('dry-run: would restart')
          ? done(undefined)
          : pending(suite.controller.process.tail(3)),
      );
      expect(await suite.eventsFor(ns, 'held', 'RestartSkipped')).toHaveLength(0);

      await install.setConfig(reconcileConfigYaml(5, 3, 'manual'));
      await waitFor('a RestartSkipped Event in manual mode', async () => {
        const events = await suite.eventsFor(ns, 'held', 'RestartSkipped');
        return events.length === 1 ? done(events) : pending(events.length);
      });
      const [untouched] = await suite.deployments(ns);
      expect(untouched && annotationOf(untouched, RESTARTED_REVISION)).toBeUndefined();
      expect(await suite.replicaSetsOf(ns, 'held')).toHaveLength(1);

      await install.setConfig(reconcileConfigYaml(5, 3, 'auto'));
      await suite.waitForRestarted([ns], revision, 1);
      await suite.waitForPodsAt([ns], revision, 1);
    });
  }, 120_000);
});
