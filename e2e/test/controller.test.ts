// outrigger-controller behind the API server: the binary runs as its own
// ServiceAccount with the RBAC of manifests/install.yaml (only the verbs it uses), wins
// the Lease in its namespace, and mirrors the namespace opt-in annotation to the
// injection label: set for `enabled`, removed for `disabled` or absent, never on its own
// namespace, and nothing written once everything agrees. A second replica follows with a warm
// cache and, when the leader stops, takes the released Lease and catches up with what changed
// meanwhile. Other runs may share the cluster: every assertion is about this file's namespaces.

import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { type KubernetesObject, type V1Namespace } from '@kubernetes/client-node';
import {
  CONTROLLER_SERVICE_ACCOUNT,
  DISABLED,
  ENABLED,
  INJECT,
  INJECTION_LABEL,
} from '@outrigger/shared';
import {
  MERGE_PATCH,
  apply,
  buildWorkspace,
  rbacManifests,
  connect,
  controllerCaughtUp,
  createNamespace,
  deleteNamespace,
  done,
  dumpingOnFailure as dumpOnFailure,
  freePort,
  pending,
  probe,
  remove,
  repoRoot,
  startProcess,
  stopAllProcesses,
  waitFor,
  writeServiceAccountKubeConfig,
  type Cluster,
  type ManagedProcess,
} from '../src';

const CONTROLLER_BIN = path.join(repoRoot, 'controller', 'bin', 'outrigger-controller.js');

const cluster: Cluster = connect();
const run = randomBytes(4).toString('hex');
const namespaces: string[] = [];
const clusterObjects: KubernetesObject[] = [];
let controller: ManagedProcess | undefined;
let metricsPort = 0;
let kubeconfig = '';
/** The namespace standing in for outrigger-system: annotated enabled, never to be labelled. */
let system: string;
/** Opted in before the controller started. */
let early: string;

async function newNamespace(prefix: string, annotations?: Record<string, string>) {
  const name = await createNamespace(cluster, { prefix, annotations });
  namespaces.push(name);
  return name;
}

/** The controller's ServiceAccount with the RBAC that ships (manifests/install.yaml). */
async function controllerAccount(): Promise<string> {
  const objects = rbacManifests('controller', system, run);
  await apply(cluster, objects);
  clusterObjects.push(...objects.filter((o) => !o.metadata?.namespace));
  const account = { namespace: system, name: CONTROLLER_SERVICE_ACCOUNT };
  return (await writeServiceAccountKubeConfig(cluster, account)).path;
}

/** Starts a replica of the controller; ready once its namespace cache has synced. */
async function startController(name: string, port: number): Promise<ManagedProcess> {
  // prettier-ignore
  const args = [
    CONTROLLER_BIN,
    '--kubeconfig', kubeconfig,
    '--namespace', system,
    '--metrics-listen', `127.0.0.1:${port}`,
    '--log-level', 'debug',
  ];
  return startProcess({
    name,
    command: process.execPath,
    args,
    ready: { url: `http://127.0.0.1:${port}/readyz` },
  });
}

async function metricValue(name: string, port = metricsPort): Promise<number | undefined> {
  const { body } = await probe(`http://127.0.0.1:${port}/metrics`);
  const line = body.split('\n').find((l) => l.startsWith(name));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

beforeAll(async () => {
  await buildWorkspace('controller');
  system = await newNamespace('outrigger-system', { [INJECT]: ENABLED });
  early = await newNamespace('ctl-early', { [INJECT]: ENABLED });
  kubeconfig = await controllerAccount();
  metricsPort = await freePort();
  controller = await startController('outrigger-controller', metricsPort);
}, 90_000);

afterAll(async () => {
  await stopAllProcesses();
  await remove(cluster, clusterObjects).catch((e: unknown) => console.warn(e));
  await Promise.all(namespaces.map((ns) => deleteNamespace(cluster, ns)));
  await cluster.close();
});

/** Runs a test body; when it fails, the test's namespaces are dumped to the run's log folder. */
const dumpingOnFailure = (body: () => Promise<void>): Promise<void> =>
  dumpOnFailure(cluster, namespaces, body);

/** The admin's merge patch of a namespace's metadata (null removes a key). */
async function patchNamespace(
  name: string,
  metadata: { annotations?: Record<string, string | null>; labels?: Record<string, string | null> },
): Promise<void> {
  await cluster.core.patchNamespace({ name, body: { metadata } }, MERGE_PATCH);
}

/** Waits until the namespace's injection label is `want` (undefined: absent). */
function waitForLabel(name: string, want: string | undefined): Promise<V1Namespace> {
  return waitFor(`namespace ${name} label ${INJECTION_LABEL}=${String(want)}`, async () => {
    const ns = await cluster.core.readNamespace({ name });
    const labels = ns.metadata?.labels ?? {};
    return labels[INJECTION_LABEL] === want
      ? done(ns)
      : pending({ labels, controllerLog: controller?.tail(5) });
  });
}

/** The controller's log entries about writing to `namespace`. */
function writesTo(namespace: string): Record<string, unknown>[] {
  return (controller?.output() ?? '')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((e) => e.message === 'mirroring the opt-in to the namespace label')
    .filter((e) => e.namespace === namespace);
}

describe('outrigger-controller behind the API server', () => {
  it('becomes the leader and labels a namespace opted in before it started', async () => {
    await dumpingOnFailure(async () => {
      await waitFor('the controller to lead', async () => {
        const leader = await metricValue('outrigger_controller_leader');
        return leader === 1 ? done(undefined) : pending({ leader });
      });
      await waitForLabel(early, ENABLED);
      // One write, or none where a controller of another run sharing the cluster was first.
      expect(writesTo(early).length).toBeLessThanOrEqual(1);
    });
  });

  it('follows the annotation: enabled sets the label, disabled or absent removes it', async () => {
    await dumpingOnFailure(async () => {
      const ns = await newNamespace('ctl-follow');
      await patchNamespace(ns, { annotations: { [INJECT]: ENABLED } });
      await waitForLabel(ns, ENABLED);

      await patchNamespace(ns, { annotations: { [INJECT]: DISABLED } });
      const disabled = await waitForLabel(ns, undefined);
      // Only our label goes: the harness's own label stays.
      expect(Object.keys(disabled.metadata?.labels ?? {})).toContain('outrigger.dev/e2e');

      // A stale mirror (the annotation gone, the label left behind) is removed too.
      await patchNamespace(ns, {
        annotations: { [INJECT]: null },
        labels: { [INJECTION_LABEL]: ENABLED },
      });
      await waitForLabel(ns, undefined);
    });
  });

  it('never labels its own namespace, whatever its annotation says', async () => {
    await dumpingOnFailure(async () => {
      // Opt one more namespace in and wait for it: the controller has seen the system one by now.
      const ns = await newNamespace('ctl-after-system', { [INJECT]: ENABLED });
      await waitForLabel(ns, ENABLED);
      const own = await cluster.core.readNamespace({ name: system });
      expect(own.metadata?.annotations?.[INJECT]).toBe(ENABLED);
      expect(own.metadata?.labels?.[INJECTION_LABEL]).toBeUndefined();
      expect(writesTo(system)).toEqual([]);
    });
  });

  it('writes nothing once everything agrees: the namespaces keep their resourceVersion', async () => {
    await dumpingOnFailure(async () => {
      const read = async () =>
        Promise.all(
          tracked.map(async (name) => {
            const ns = await cluster.core.readNamespace({ name });
            return { name, resourceVersion: ns.metadata?.resourceVersion };
          }),
        );
      const writes = () => tracked.map((name) => writesTo(name).length);
      const tracked = [...namespaces];
      const before = await read();
      const writesBefore = writes();
      // A namespace made now reaches the controller after every earlier namespace event: once
      // it has seen it and gone idle, it has done all it would about the ones before.
      await controllerCaughtUp(metricsPort, 'namespaces', () => newNamespace('ctl-nudge'));
      expect(await read()).toEqual(before);
      expect(writes()).toEqual(writesBefore);
      expect(await metricValue('outrigger_controller_leader')).toBe(1);
    });
  });

  it('a follower keeps a warm cache and, once it leads, catches up with what changed', async () => {
    await dumpingOnFailure(async () => {
      const port = await freePort();
      const follower = await startController('outrigger-controller-2', port);
      expect(await metricValue('outrigger_controller_leader', port)).toBe(0);
      // Changed while the follower follows: only the leader acts on it.
      const ns = await newNamespace('ctl-handover');
      await controller?.stop();
      const stoppedAt = Date.now();
      await patchNamespace(ns, { annotations: { [INJECT]: ENABLED } });
      await waitFor('the follower to lead', async () => {
        const leader = await metricValue('outrigger_controller_leader', port);
        return leader === 1 ? done(undefined) : pending({ leader, log: follower.tail(5) });
      });
      // The leader released the Lease on SIGTERM: no waiting for it to expire (15 s).
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      await waitForLabel(ns, ENABLED);
      await follower.waitForLog('leading: reconciling every namespace');
    });
  });
});
