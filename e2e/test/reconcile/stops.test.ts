// The reconciler behind a real API server (what stops a wave and what does not): e2e/src/reconcile-suite.ts has the
// install these suites share.

import { type KubernetesObject } from '@kubernetes/client-node';
import {
  COMPLETED_REVISION,
  RESTARTED_REVISION,
  RESUME,
  RESUMED_AT,
  WAVE_STOPPED,
} from '@outrigger/shared';
import {
  apply,
  controllerCaughtUp,
  deploymentYaml,
  done,
  metricSum,
  nudgeDeployment,
  pending,
  refusingPolicy,
  remove,
  waitFor,
  waitForDryRun,
  annotationOf,
  reconcileConfigYaml,
  revisionOf,
  useReconcileSuite,
} from '../../src';

const suite = useReconcileSuite();
const { cluster, install } = suite;

describe('outrigger-controller with the webhook: what stops a wave and what does not', () => {
  let revision = suite.firstRevision;

  it('a rollout that cannot complete stops the wave until an admin resumes it', async () => {
    // Sorted first (the wave goes by namespace, kind, name), and its new pods are refused by
    // a quota, so its rollout passes the Deployment's progress deadline.
    const stuckNs = await install.newNamespace('r4a-stuck', { optedIn: true });
    const restNs = await install.newNamespace('r4b-rest', { optedIn: true });
    await suite.scenario([stuckNs, restNs], async () => {
      await suite.optInLabelled(stuckNs);
      await suite.optInLabelled(restNs);
      await apply(
        cluster,
        deploymentYaml('stuck', {
          spec: {
            progressDeadlineSeconds: 10,
            strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
          },
        }),
        { namespace: stuckNs },
      );
      await apply(cluster, ['x', 'y', 'z'].map((n) => deploymentYaml(n)).join('---\n'), {
        namespace: restNs,
      });
      await suite.waitForPodsAt([stuckNs, restNs], revision, 4);
      await apply(
        cluster,
        {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'one-pod' },
          spec: { hard: { pods: '1' } },
        } as KubernetesObject,
        { namespace: stuckNs },
      );

      const yaml = reconcileConfigYaml(2, 1);
      revision = revisionOf(yaml);
      await install.setConfig(yaml);
      const stopped = await waitFor(
        'the wave to stop',
        async () => {
          const a = await suite.configMapAnnotations();
          return a[WAVE_STOPPED]?.startsWith(revision) ? done(a[WAVE_STOPPED]) : pending(a);
        },
        { timeoutMs: 90_000 },
      );
      expect(stopped).toContain(`${stuckNs}/Deployment/stuck`);
      // The Event is recorded after the annotation is written: wait for it, then count it.
      const stalls = await waitFor(
        'the RolloutStalled Event on Deployment stuck',
        async () => {
          const events = await suite.eventsFor(stuckNs, 'stuck', 'RolloutStalled');
          return events.length > 0 ? done(events) : pending('no Event yet');
        },
        { timeoutMs: 15_000 },
      );
      expect(stalls).toHaveLength(1);
      expect(
        await metricSum(suite.controller.metricsPort, 'outrigger_controller_rollout_stalls_total'),
      ).toBeGreaterThanOrEqual(1);
      expect(
        await metricSum(suite.controller.metricsPort, 'outrigger_controller_wave_stopped'),
      ).toBe(1);

      // Nothing else restarts while the wave is stopped: not once the controller has caught up.
      await controllerCaughtUp(
        suite.controller.metricsPort,
        'deployments',
        nudgeDeployment(cluster, restNs, 'x'),
      );
      for (const d of await suite.deployments(restNs))
        expect(annotationOf(d, RESTARTED_REVISION)).toBeUndefined();

      await install.annotateConfig({ [RESUME]: 'now' });
      await suite.waitForRestarted([restNs], revision, 3);
      const after = await suite.configMapAnnotations();
      expect(after[WAVE_STOPPED]).toBeUndefined();
      expect(after[RESUME]).toBeUndefined();
      expect(after[RESUMED_AT]).toBeDefined();
      expect(
        await metricSum(suite.controller.metricsPort, 'outrigger_controller_wave_stopped'),
      ).toBe(0);
    });
  }, 240_000);

  it('an owner whose restart the API server refuses does not hold up the wave', async () => {
    const ns = await install.newNamespace('r45-refused', { optedIn: true });
    // A policy that refuses the controller's writes to one Deployment, as a Kyverno or
    // Gatekeeper rule might; it sorts first, so a wave it could block would stop right there.
    const refusal = 'refused by the e2e policy';
    const policy = refusingPolicy({
      name: `outrigger-e2e-refuse-${install.run}`,
      namespace: ns,
      deployment: 'refused',
      accountsOf: install.system,
      message: refusal,
    });
    try {
      await suite.scenario([ns], async () => {
        await suite.optInLabelled(ns);
        await apply(cluster, ['refused', 'z1', 'z2'].map((n) => deploymentYaml(n)).join('---\n'), {
          namespace: ns,
        });
        await suite.waitForPodsAt([ns], revision, 3);
        await apply(cluster, policy);
        await waitForDryRun(cluster, { namespace: ns, name: 'refused', refusal });
        const failuresBefore = await metricSum(
          suite.controller.metricsPort,
          'outrigger_controller_write_failures_total',
        );

        const yaml = reconcileConfigYaml(4, 1);
        revision = revisionOf(yaml);
        await install.setConfig(yaml);
        await waitFor(
          'z1 and z2 restarted one after the other, past the refused owner',
          async () => {
            const ds = await suite.deployments(ns);
            const done2 = ds.filter(
              (d) =>
                d.metadata?.name !== 'refused' &&
                annotationOf(d, RESTARTED_REVISION) === revision &&
                d.metadata?.labels?.[COMPLETED_REVISION] === revision,
            );
            return done2.length === 2 ? done(undefined) : pending(done2.length);
          },
          { timeoutMs: 90_000 },
        );
        const [refused] = (await suite.deployments(ns)).filter(
          (d) => d.metadata?.name === 'refused',
        );
        expect(refused && annotationOf(refused, RESTARTED_REVISION)).toBeUndefined();
        const [event] = await suite.eventsFor(ns, 'refused', 'RestartFailed');
        expect(event?.message).toContain('refused by the e2e policy');
        expect(
          await metricSum(
            suite.controller.metricsPort,
            'outrigger_controller_write_failures_total',
          ),
        ).toBeGreaterThan(failuresBefore);

        // Once the policy is gone, the owner's back-off runs out and it is restarted too.
        await remove(cluster, policy);
        await suite.waitForRestarted([ns], revision, 3);
      });
    } finally {
      await remove(cluster, policy);
    }
  }, 180_000);
});
