// The controller shell without an API server: what it enqueues from a namespace view, and that
// a reconcile started by that view reads that view (an add() can start a reconcile at once).

import type { V1Namespace } from '@kubernetes/client-node';
import { KubeApi } from '@outrigger/kube';
import { ENABLED, INJECT } from '@outrigger/shared';
import { waitFor } from '@outrigger/testkit';
import { Controller } from '../src/controller';
import { silentLogger } from '../src/log';
import { ControllerMetrics } from '../src/metrics';

function ns(name: string, resourceVersion: string, optedIn = false): V1Namespace {
  return {
    metadata: { name, resourceVersion, annotations: optedIn ? { [INJECT]: ENABLED } : {} },
  };
}

/** A watch's delta that brings these namespaces, added or changed. */
const changed = (...namespaces: V1Namespace[]) => ({ changed: namespaces, deleted: [] });

/**
 * An API client whose patches all succeed at once, recording where they went. A patch that
 * failed would be retried after the queue's back-off, and the count of writes would then depend
 * on when it was read.
 */
class RecordingApi extends KubeApi {
  readonly patched: string[] = [];

  constructor() {
    super({ server: 'http://127.0.0.1:1' });
  }

  override patch<T>(path: string): Promise<T> {
    this.patched.push(path);
    return Promise.resolve({} as T);
  }
}

async function writes(metrics: ControllerMetrics): Promise<number> {
  return (await metrics.writes.get()).values.reduce((sum, v) => sum + v.value, 0);
}

/** Namespace reconciles that have ended, whatever their outcome. */
async function namespacesReconciled(metrics: ControllerMetrics): Promise<number> {
  return (await metrics.reconciles.get()).values
    .filter((v) => v.labels.kind === 'Namespace')
    .reduce((s, v) => s + v.value, 0);
}

/** Nothing queued and nothing running. */
async function idle(metrics: ControllerMetrics): Promise<boolean> {
  const value = async (g: ControllerMetrics['queueDepth']) => (await g.get()).values[0]?.value;
  return (await value(metrics.queueDepth)) === 0 && (await value(metrics.reconcilesRunning)) === 0;
}

/** Waits until `n` namespace reconciles have ended and the queue is idle. */
function reconciled(metrics: ControllerMetrics, n: number): Promise<void> {
  return waitFor(
    `${n} namespace reconciles and an idle queue`,
    async () => (await namespacesReconciled(metrics)) >= n && (await idle(metrics)),
  );
}

describe('Controller', () => {
  const logger = silentLogger();
  let metrics: ControllerMetrics;
  let api: RecordingApi;
  let controller: Controller;

  beforeEach(() => {
    metrics = new ControllerMetrics();
    api = new RecordingApi();
    controller = new Controller({
      api,
      systemNamespace: 'outrigger-system',
      configMap: { namespace: 'outrigger-system', name: 'outrigger-config' },
      identity: 'test',
      logger,
      metrics,
    });
  });
  afterEach(() => controller.stopLeading());

  it('writes nothing while following, and sets the leader gauge when leading', async () => {
    controller.onNamespaces(changed(ns('shop', '1', true)));
    // The view was taken in: a follower knows the namespace, and has no queue to act on it.
    expect(controller.namespaces.get('shop')).toBeDefined();
    expect(await writes(metrics)).toBe(0);
    expect((await metrics.leader.get()).values[0]?.value).toBe(0);
    controller.startLeading();
    expect((await metrics.leader.get()).values[0]?.value).toBe(1);
    await reconciled(metrics, 1);
    expect(api.patched).toEqual(['/api/v1/namespaces/shop']);
    expect(await writes(metrics)).toBe(1);
  });

  it('reconciles a namespace that arrives in a new view against that view', async () => {
    controller.startLeading();
    controller.onNamespaces(changed(ns('quiet', '1')));
    controller.onNamespaces(changed(ns('shop', '2', true)));
    await reconciled(metrics, 2);
    // shop, opted in by the second view, got its label; quiet needed none.
    expect(api.patched).toEqual(['/api/v1/namespaces/shop']);
    expect(await writes(metrics)).toBe(1);
  });

  it('enqueues only namespaces whose resourceVersion changed', async () => {
    controller.startLeading();
    controller.onNamespaces(changed(ns('quiet', '1')));
    await reconciled(metrics, 1);
    // The same view again, then a namespace not seen before: once that one is reconciled and
    // the queue is idle, a reconcile of the repeat would have run too.
    controller.onNamespaces(changed(ns('quiet', '1')));
    controller.onNamespaces(changed(ns('loud', '1')));
    await reconciled(metrics, 2);
    expect(await namespacesReconciled(metrics)).toBe(2);
  });
});
