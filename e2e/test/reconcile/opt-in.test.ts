// The reconciler behind a real API server (opting a namespace in, and creating in an opted-in one): e2e/src/reconcile-suite.ts has the
// install these suites share.

import {
  OWNER_KIND,
  RESTARTED_REVISION,
  REVISION,
  readStamp,
  type KubeObject,
} from '@outrigger/shared';
import {
  apply,
  controllerCaughtUp,
  deploymentYaml,
  done,
  metricSamples,
  nudgeDeployment,
  pending,
  threeKindsYaml,
  waitFor,
  waitForRollout,
  annotationOf,
  useReconcileSuite,
} from '../../src';

const threeKinds = threeKindsYaml(2);

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: opting a namespace in, and creating in an opted-in one', () => {
  const revision = suite.firstRevision;

  it('opting a namespace in restarts its Deployment, StatefulSet and DaemonSet onto the sidecar', async () => {
    const ns = await install.newNamespace('r1-existing');
    await suite.scenario([ns], async () => {
      await apply(cluster, threeKinds, { namespace: ns });
      const [ds] = await Promise.all([
        waitForRollout(cluster, { kind: 'DaemonSet', namespace: ns, name: 'agent' }),
        waitForRollout(cluster, { kind: 'StatefulSet', namespace: ns, name: 'db' }),
        waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'web' }),
      ]);
      const total = 2 + 2 + (ds.status?.desiredNumberScheduled ?? 0);
      expect((await suite.livePods(ns)).filter((p) => p.metadata?.labels?.[REVISION])).toEqual([]);

      await suite.optIn(ns);
      const pods = await suite.waitForPodsAt([ns], revision, total);
      for (const pod of pods) expect(pod.metadata?.labels?.[OWNER_KIND]).toBeDefined();
      for (const [kind, name] of [
        ['Deployment', 'web'],
        ['StatefulSet', 'db'],
        ['DaemonSet', 'agent'],
      ] as const) {
        const w = await waitForRollout(cluster, { kind, namespace: ns, name });
        expect(readStamp(JSON.parse(JSON.stringify(w)) as KubeObject)).toMatchObject({
          ownerKind: kind,
          ownerName: name,
          revision,
        });
        expect(annotationOf(w, RESTARTED_REVISION)).toBe(revision);
        expect(await suite.eventsFor(ns, name, 'Restarted')).toHaveLength(1);
      }
      // Restarted once: the original ReplicaSet and the one of the restart.
      expect(await suite.replicaSetsOf(ns, 'web')).toHaveLength(2);
    });
  });

  it('a new Deployment in an opted-in namespace ends with exactly one ReplicaSet', async () => {
    const ns = await install.newNamespace('r2-new', { optedIn: true });
    await suite.scenario([ns], async () => {
      await suite.optInLabelled(ns);
      await apply(cluster, deploymentYaml('fresh', { replicas: 2 }), { namespace: ns });
      await waitForRollout(cluster, { kind: 'Deployment', namespace: ns, name: 'fresh' });
      await suite.waitForPodsAt([ns], revision, 2);
      // The controller has seen the Deployment (it counts it as current) and had time to act,
      // were it going to.
      await waitFor('the controller to count the Deployment as current', async () => {
        const states = await metricSamples(
          suite.controller.metricsPort,
          'outrigger_controller_owners',
        );
        return (states.get('{state="current"}') ?? 0) >= 1 ? done(undefined) : pending(states);
      });
      await controllerCaughtUp(
        suite.controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, ns, 'fresh'),
      );
      const [d] = await suite.deployments(ns);
      expect(d && annotationOf(d, RESTARTED_REVISION)).toBeUndefined();
      expect(await suite.replicaSetsOf(ns, 'fresh')).toHaveLength(1);
    });
  });
});
