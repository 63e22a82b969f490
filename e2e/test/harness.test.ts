// The harness's own behaviour, where a mistake would make other suites flaky or misleading:
// waiting and its messages, manifests, rollout status, processes (readiness, SIGKILL, leftovers),
// apply/remove and namespaces against the cluster under test.

import type { V1Deployment, V1StatefulSet } from '@kubernetes/client-node';
import {
  apply,
  connect,
  createNamespace,
  deleteNamespace,
  deploymentRolloutStatus,
  done,
  failed,
  isRunning,
  logDir,
  parseManifests,
  pending,
  reapLeftoverProcesses,
  remove,
  startProcess,
  statefulSetRolloutStatus,
  stopAllProcesses,
  waitFor,
  WaitFailedError,
  WaitTimeoutError,
  type Cluster,
} from '../src';

const cluster: Cluster = connect();

afterAll(async () => {
  await stopAllProcesses();
  await cluster.close();
});

/** `node -e script` as a managed process. */
const node = (script: string): { command: string; args: string[] } => ({
  command: process.execPath,
  args: ['-e', script],
});
const KEEP_ALIVE = 'setInterval(() => {}, 1000);';

describe('waitFor', () => {
  it('resolves with the value of the first check that is done', async () => {
    let calls = 0;
    const value = await waitFor(
      'the third call',
      () => (++calls === 3 ? done('third') : pending(calls)),
      {
        intervalMs: 1,
      },
    );
    expect(value).toBe('third');
  });

  it('names what it waited for, the last state and the deadline on timeout', async () => {
    const error: unknown = await waitFor(
      'the moon to turn blue',
      () => pending({ colour: 'grey' }),
      {
        timeoutMs: 50,
        intervalMs: 10,
      },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    const message = (error as Error).message;
    expect(message).toContain('timed out waiting for the moon to turn blue');
    expect(message).toContain('Last observed: {"colour":"grey"}');
    expect(message).toMatch(/deadline \d{4}-\d\d-\d\dT/);
  });

  it('retries checks that throw and reports the last error', async () => {
    const error: unknown = await waitFor(
      'a flaky check',
      () => {
        throw new Error('connection refused');
      },
      { timeoutMs: 30, intervalMs: 5 },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toContain('Last observed: Error: connection refused');
  });

  it('gives up at the deadline even when a check hangs', async () => {
    const started = Date.now();
    const error: unknown = await waitFor(
      'a hanging check',
      () => new Promise<never>(() => undefined),
      {
        timeoutMs: 100,
      },
    ).catch((e: unknown) => e);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect((error as Error).message).toContain('still running at the deadline');
  });

  it('stops at once when the check says failed()', async () => {
    const error: unknown = await waitFor('a lost cause', () => failed('it crashed'), {
      timeoutMs: 10_000,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitFailedError);
    expect((error as Error).message).toBe('gave up waiting for a lost cause: it crashed');
  });
});

describe('parseManifests', () => {
  it('reads multi-document YAML, skipping empty documents and flattening Lists', () => {
    const manifests = parseManifests(`
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# only a comment
---
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: Secret, metadata: {name: b}}
  - {apiVersion: v1, kind: Service, metadata: {name: c}}
`);
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual([
      'ConfigMap/a',
      'Secret/b',
      'Service/c',
    ]);
  });

  it('says which document is not an object or not valid YAML', () => {
    expect(() =>
      parseManifests('{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n---\nkind: Secret\n'),
    ).toThrow(
      'YAML document 2 is not a Kubernetes object: it needs apiVersion, kind and metadata.name',
    );
    expect(() => parseManifests('a: [1, 2\n')).toThrow(/^YAML document 1: /);
  });
});

describe('rollout status (as kubectl rollout status decides)', () => {
  const deployment = (status: V1Deployment['status'], generation = 2): V1Deployment => ({
    metadata: { name: 'web', generation },
    spec: { replicas: 3, selector: {}, template: {} },
    status,
  });

  it('waits for the new generation, updated replicas, old replicas and availability', () => {
    const full = { observedGeneration: 2, replicas: 3, updatedReplicas: 3, availableReplicas: 3 };
    expect(deploymentRolloutStatus(deployment({ ...full, observedGeneration: 1 })).message).toBe(
      'waiting for deployment web spec update to be observed',
    );
    expect(deploymentRolloutStatus(deployment({ ...full, updatedReplicas: 1 })).message).toBe(
      '1 out of 3 new replicas have been updated',
    );
    expect(deploymentRolloutStatus(deployment({ ...full, replicas: 4 })).message).toBe(
      '1 old replicas are pending termination',
    );
    expect(deploymentRolloutStatus(deployment({ ...full, availableReplicas: 2 })).message).toBe(
      '2 of 3 updated replicas are available',
    );
    expect(deploymentRolloutStatus(deployment(full)).outcome).toBe('done');
  });

  it('fails a Deployment past its progress deadline', () => {
    const status = deploymentRolloutStatus(
      deployment({
        observedGeneration: 2,
        conditions: [{ type: 'Progressing', status: 'False', reason: 'ProgressDeadlineExceeded' }],
      }),
    );
    expect(status.outcome).toBe('failed');
  });

  it('honours a StatefulSet partition', () => {
    const statefulSet: V1StatefulSet = {
      metadata: { name: 'db', generation: 1 },
      spec: {
        replicas: 3,
        selector: {},
        serviceName: 'db',
        template: {},
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 2 } },
      },
      status: { observedGeneration: 1, replicas: 3, readyReplicas: 3, updatedReplicas: 1 },
    };
    expect(statefulSetRolloutStatus(statefulSet).outcome).toBe('done');
  });
});

describe('startProcess', () => {
  it('waits for a log line, captures the output, and stops with SIGTERM', async () => {
    const proc = await startProcess({
      name: 'log-ready',
      ...node(`console.log('listening'); console.error('to stderr'); ${KEEP_ALIVE}`),
      ready: { logLine: /^listening$/ },
    });
    await proc.waitForLog('to stderr');
    expect(proc.logFile.startsWith(logDir())).toBe(true);
    expect(await proc.stop()).toEqual({ code: null, signal: 'SIGTERM' });
    expect(proc.output()).toContain('ended: signal SIGTERM');
  });

  it('gives the process no KUBECONFIG unless asked, and the one asked for otherwise', async () => {
    const print = node(`console.log('KUBECONFIG=' + (process.env.KUBECONFIG ?? '<unset>'))`);
    const without = await startProcess({ name: 'env-without', ...print });
    const withOne = await startProcess({
      name: 'env-with',
      ...print,
      kubeconfig: '/some/kubeconfig',
    });
    await Promise.all([without.exited, withOne.exited]);
    expect(without.output()).toContain('KUBECONFIG=<unset>');
    expect(withOne.output()).toContain('KUBECONFIG=/some/kubeconfig');
  });

  it('SIGKILLs a process that ignores SIGTERM, and what it left in its process group', async () => {
    const stubborn = `process.on('SIGTERM', () => console.log('ignoring SIGTERM')); ${KEEP_ALIVE}`;
    const parent = `
      const { spawn } = require('node:child_process');
      const child = spawn(process.execPath, ['-e', ${JSON.stringify(stubborn)}], { stdio: 'inherit' });
      console.log('child ' + child.pid);
      ${stubborn}`;
    const proc = await startProcess({
      name: 'stubborn',
      ...node(parent),
      ready: { logLine: 'child ' },
      stopTimeoutMs: 300,
    });
    const child = Number(/child (\d+)/.exec(proc.output())?.[1]);
    expect(isRunning(child)).toBe(true);
    expect(await proc.stop()).toEqual({ code: null, signal: 'SIGKILL' });
    await waitFor(
      'the grandchild to be killed',
      () => (isRunning(child) ? pending('running') : done(true)),
      {
        timeoutMs: 2_000,
      },
    );
    expect(proc.output()).toContain('ignoring SIGTERM');
  });

  it('fails fast, with the end of the log, when the process exits before it is ready', async () => {
    const error: unknown = await startProcess({
      name: 'crashes',
      ...node(`console.error('cannot bind'); process.exit(3)`),
      ready: { logLine: 'never printed' },
    }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(
      /crashes ended \(exit code 3\) while waiting for .*\n(.*\n)*cannot bind/,
    );
  });

  it('is killed by the reaper global teardown runs if a test forgets to stop it', async () => {
    const forgotten = await startProcess({ name: 'forgotten', ...node(KEEP_ALIVE) });
    expect(reapLeftoverProcesses(logDir(), (pid) => pid === forgotten.pid)).toEqual([
      `forgotten (pid ${forgotten.pid}, log ${forgotten.logFile})`,
    ]);
    expect(await forgotten.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });
});

describe('apply and remove', () => {
  let namespace = '';
  beforeAll(async () => {
    namespace = await createNamespace(cluster, { prefix: 'harness' });
  });
  afterAll(async () => {
    await deleteNamespace(cluster, namespace);
  });

  const configMap = (value: string): string => `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {value: "${value}"}
`;

  it('server-side applies, again and again, and removes', async () => {
    const [first] = await apply(cluster, configMap('1'), { namespace });
    expect(first?.metadata?.managedFields?.[0]?.manager).toBe('outrigger-e2e');
    await apply(cluster, configMap('2'), { namespace });
    const stored = await cluster.core.readNamespacedConfigMap({ namespace, name: 'settings' });
    expect(stored.data).toEqual({ value: '2' });

    await remove(cluster, configMap('2'), { namespace, wait: true });
    await remove(cluster, configMap('2'), { namespace }); // already gone: fine
    await expect(
      cluster.core.readNamespacedConfigMap({ namespace, name: 'settings' }),
    ).rejects.toThrow();
  });

  it('refuses a namespaced object without a namespace, and ignores one on cluster-scoped objects', async () => {
    await expect(apply(cluster, configMap('1'))).rejects.toThrow(
      'ConfigMap settings is namespaced: set metadata.namespace or pass { namespace }',
    );
    const role = {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `${namespace}-reader` },
      rules: [],
    };
    const [stored] = await apply(cluster, role, { namespace });
    expect(stored?.metadata?.namespace).toBeUndefined();
    await remove(cluster, role, { wait: true });
  });

  it('names the object and keeps the API server message when applying fails', async () => {
    const bad = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'bad' },
      data: { 'no spaces': '' },
    };
    await expect(apply(cluster, bad, { namespace })).rejects.toThrow(
      new RegExp(`^applying ConfigMap ${namespace}/bad failed: HTTP 422: .*no spaces`),
    );
  });
});

describe('namespaces', () => {
  it('are created ready for pods and deleted by the namespace controller', async () => {
    const name = await createNamespace(cluster, { prefix: 'Harness NS!' });
    expect(name).toMatch(/^harness-ns-[0-9a-f]{6}$/);
    const sa = await cluster.core.readNamespacedServiceAccount({
      namespace: name,
      name: 'default',
    });
    expect(sa.metadata?.name).toBe('default');
    await deleteNamespace(cluster, name, { wait: true });
  });
});
