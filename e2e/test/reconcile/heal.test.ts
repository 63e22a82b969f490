// The reconciler behind a real API server (pods that escaped while the webhook was down): e2e/src/reconcile-suite.ts has the
// install these suites share.

import { HEALED_REVISION, REVISION, SKIPPED, STAMPED } from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  controllerCaughtUp,
  deploymentYaml,
  done,
  metricSamples,
  nudgeDeployment,
  pending,
  waitFor,
  waveStepFinished,
  annotationOf,
  useReconcileSuite,
} from '../../src';

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: pods that escaped while the webhook was down', () => {
  const revision = suite.firstRevision;

  it('heals pods that escaped while the webhook was down, once, after it is back', async () => {
    const ns = await install.newNamespace('r6-heal', { optedIn: true });
    await suite.scenario([ns], async () => {
      await suite.optInLabelled(ns);
      await apply(cluster, deploymentYaml('leaky', { replicas: 1 }), { namespace: ns });
      await suite.waitForPodsAt([ns], revision, 1);

      await install.stopWebhook();
      await cluster.apps.patchNamespacedDeploymentScale(
        { namespace: ns, name: 'leaky', body: { spec: { replicas: 3 } } },
        MERGE_PATCH,
      );
      const escaped = await waitFor('two pods to escape', async () => {
        const pods = (await suite.livePods(ns)).filter(
          (p) =>
            p.metadata?.labels?.[STAMPED] === 'true' &&
            !p.metadata.labels[REVISION] &&
            !p.metadata.labels[SKIPPED],
        );
        return pods.length === 2 ? done(pods) : pending(pods.length);
      });
      expect(escaped).toHaveLength(2);
      // No heal while the webhook is down: its pods would escape too. Once the controller
      // counts the owner escaped, the step that did (and would have healed it) has finished.
      await waitFor('the controller to count an owner escaped', async () => {
        const states = await metricSamples(
          suite.controller.metricsPort,
          'outrigger_controller_owners',
        );
        return (states.get('{state="escaped"}') ?? 0) >= 1 ? done(undefined) : pending(states);
      });
      await waveStepFinished(suite.controller.metricsPort);
      const [held] = await suite.deployments(ns);
      expect(held && annotationOf(held, HEALED_REVISION)).toBeUndefined();

      await install.resumeWebhook();
      await suite.waitForPodsAt([ns], revision, 3);
      const [healed] = await suite.deployments(ns);
      expect(healed && annotationOf(healed, HEALED_REVISION)).toBe(revision);
      expect(await suite.eventsFor(ns, 'leaky', 'Healed')).toHaveLength(1);
      await controllerCaughtUp(
        suite.controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, ns, 'leaky'),
      );
      expect(await suite.replicaSetsOf(ns, 'leaky')).toHaveLength(2);
      expect(await suite.eventsFor(ns, 'leaky', 'Healed')).toHaveLength(1);
    });
  }, 180_000);
});
