// The controller shell without an API server: what it enqueues from a namespace view, and that
// a reconcile started by that view reads that view (an add() can start a reconcile at once).

import type { V1Namespace } from '@kubernetes/client-node';
import { ENABLED, INJECT } from '@outrigger/shared';
import { Controller } from '../src/controller';
import { silentLogger } from '../src/log';
import { ControllerMetrics } from '../src/metrics';
import { unreachable } from './kubeconfig';

function ns(name: string, resourceVersion: string, optedIn = false): V1Namespace {
  return {
    metadata: { name, resourceVersion, annotations: optedIn ? { [INJECT]: ENABLED } : {} },
  };
}

/** A watch's delta that brings these namespaces, added or changed. */
const changed = (...namespaces: V1Namespace[]) => ({ changed: namespaces, deleted: [] });

async function writes(metrics: ControllerMetrics): Promise<number> {
  return (await metrics.writes.get()).values.reduce((sum, v) => sum + v.value, 0);
}

describe('Controller', () => {
  const logger = silentLogger();
  let metrics: ControllerMetrics;
  let controller: Controller;

  beforeEach(() => {
    metrics = new ControllerMetrics();
    controller = new Controller({
      api: unreachable(),
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
    expect(await writes(metrics)).toBe(0);
    expect((await metrics.leader.get()).values[0]?.value).toBe(0);
    controller.startLeading();
    expect((await metrics.leader.get()).values[0]?.value).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(await writes(metrics)).toBe(1);
  });

  it('reconciles a namespace that arrives in a new view against that view', async () => {
    controller.startLeading();
    controller.onNamespaces(changed(ns('quiet', '1')));
    controller.onNamespaces(changed(ns('shop', '2', true)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await writes(metrics)).toBe(1);
  });

  it('enqueues only namespaces whose resourceVersion changed', async () => {
    const reconciled = async () =>
      (await metrics.reconciles.get()).values
        .filter((v) => v.labels.kind === 'Namespace')
        .reduce((s, v) => s + v.value, 0);
    controller.startLeading();
    controller.onNamespaces(changed(ns('quiet', '1')));
    await until(async () => (await reconciled()) === 1 && (await idle(metrics)));
    // The same view again, then a namespace not seen before: once that one is reconciled and
    // the queue is idle, a reconcile of the repeat would have run too.
    controller.onNamespaces(changed(ns('quiet', '1')));
    controller.onNamespaces(changed(ns('loud', '1')));
    await until(async () => (await reconciled()) >= 2 && (await idle(metrics)));
    expect(await reconciled()).toBe(2);
  });
});

/** Nothing queued and nothing running. */
async function idle(metrics: ControllerMetrics): Promise<boolean> {
  const value = async (g: ControllerMetrics['queueDepth']) => (await g.get()).values[0]?.value;
  return (await value(metrics.queueDepth)) === 0 && (await value(metrics.reconcilesRunning)) === 0;
}

/** Turns the event loop until `condition` holds (at most 5 s). */
async function until(condition: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('the condition did not hold within 5 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
}
