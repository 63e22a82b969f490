// `outrigger status -n NS` answers for NS what the cluster-wide `outrigger status` (the
// controller's own rules over everything it reads) answers for it. The budget of rollouts at
// once is cluster-wide: an owner elsewhere that is due only because of its pods (pods that
// escaped the webhook, to heal) takes a slot, so the -n view must read those pods too.
//
// No controller runs here, so nothing acts on the plan while the test reads it: the webhook
// stamps the Deployments, the namespaces carry the opt-in label the controller would give them,
// and pods escape while the webhook is stopped.

import type { V1Pod } from '@kubernetes/client-node';
import { ENABLED, INJECTION_LABEL, REVISION, SKIPPED, STAMPED } from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  connect,
  deploymentYaml,
  done,
  outriggerCli,
  pending,
  TestInstall,
  waitFor,
  type Cluster,
  useTestInstall,
} from '../src';

const cluster: Cluster = connect();
const install = new TestInstall(cluster, {
  configYaml: 'rollout:\n  maxConcurrent: 1\n  canary:\n    count: 0\n',
});
/**
 * Sorts before `here`: the planner takes owners in namespace order, so its heal comes first. Both
 * start with a digit so they sort before any other suite's namespaces, whose owners (still there
 * while those namespaces terminate) would otherwise take the slot first.
 */
let elsewhere = '';
let here = '';

interface Row {
  namespace: string;
  name: string;
  state: string;
  action: string;
  reason: string;
}

async function rows(...scope: string[]): Promise<Row[]> {
  const { code, stdout, stderr } = await outriggerCli(install, 'status', ...scope, '-o', 'json');
  if (code !== 0) throw new Error(`outrigger status exited ${code}: ${stderr}`);
  return (JSON.parse(stdout) as { rows: Row[] }).rows;
}

const escaped = (pods: V1Pod[]): V1Pod[] =>
  pods.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      p.metadata?.labels?.[STAMPED] === 'true' &&
      !p.metadata.labels[REVISION] &&
      !p.metadata.labels[SKIPPED],
  );

useTestInstall(install, { build: ['webhook', 'cli'], then: start, setupTimeoutMs: 180_000 });

async function start(): Promise<void> {
  const optedIn = { optedIn: true, labels: { [INJECTION_LABEL]: ENABLED } };
  elsewhere = await install.newNamespace('0-scope-a-elsewhere', optedIn);
  here = await install.newNamespace('0-scope-b-here', optedIn);
  for (const namespace of [elsewhere, here])
    await apply(cluster, deploymentYaml('app'), { namespace });
  await waitFor('one injected pod in each namespace', async () => {
    const counts = await Promise.all(
      [elsewhere, here].map(async (namespace) => {
        const { items } = await cluster.core.listNamespacedPod({ namespace });
        return items.filter((p) => p.metadata?.labels?.[REVISION]).length;
      }),
    );
    return counts.every((n) => n === 1) ? done(undefined) : pending(counts);
  });
  // Pods made while the webhook is down pass it by: both owners have one to heal.
  await install.stopWebhook();
  for (const namespace of [elsewhere, here])
    await cluster.apps.patchNamespacedDeploymentScale(
      { namespace, name: 'app', body: { spec: { replicas: 2 } } },
      MERGE_PATCH,
    );
  await waitFor('a pod to escape in each namespace', async () => {
    const counts = await Promise.all(
      [elsewhere, here].map(
        async (namespace) =>
          escaped((await cluster.core.listNamespacedPod({ namespace })).items).length,
      ),
    );
    return counts.every((n) => n === 1) ? done(undefined) : pending(counts);
  });
  await install.resumeWebhook();
}

describe('outrigger status -n', () => {
  it('answers for its namespace what the cluster-wide status answers, budget included', async () => {
    const all = await rows();
    const mine = (r: Row) => r.namespace === elsewhere || r.namespace === here;
    // The premise: the heal elsewhere holds the one slot, so the owner here waits for it.
    expect(all.filter(mine).map((r) => [r.namespace, r.action, r.reason])).toEqual([
      [elsewhere, 'restart', 'escaped'],
      [here, 'wait', 'budget'],
    ]);
    expect(await rows('-n', here)).toEqual(all.filter((r) => r.namespace === here));
    expect(await rows('-n', elsewhere)).toEqual(all.filter((r) => r.namespace === elsewhere));
  });
});
