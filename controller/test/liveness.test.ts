// The controller never busy-loops. With the real clock: a wave step that cannot
// make progress waits for an event or a timer, and the work queue lets the event loop turn
// between two runs of a key, so the probes, the Lease renewals and the watches keep their turn.
// Each scenario is the state the reproduction reached; the wave's own clock is moved on
// where the issue waited for a back-off to run out.

import type { V1Namespace } from '@kubernetes/client-node';
import { ApiError, type KubeApi } from '@outrigger/kube';
import {
  CONFIG_REVISION,
  ENABLED,
  INJECT,
  OWNER_KIND,
  OWNER_NAME,
  RESTARTED_AT,
  RESTARTED_REVISION,
  STAMPED,
  configRevision,
  formatTime,
  mustParseConfig,
  LAST_GOOD_REVISION,
  WAVE_STAGE,
  type Workload,
} from '@outrigger/shared';
import type { ConfigInForce } from '../src/config/config-map';
import { EventRecorder, type EventReason } from '../src/events';
import { silentLogger } from '../src/log';
import { ControllerMetrics } from '../src/metrics';
import { OwnerIndex } from '../src/watch/owner-index';
import { WorkQueue, type ReconcileEvent, type Result } from '../src/watch/queue';
import type { WaveView } from '../src/wave/wave-contract';
import { WAVE_KEY, WaveRunner } from '../src/wave/wave-runner';
import { unreachable } from './kubeconfig';

const logger = silentLogger();
const NAMESPACE = 'shop';
/** The shortest wait a wave step asks for (docs/controller.md, "Never a busy loop"). */
const FLOOR_MS = 1000;

const config = ((): ConfigInForce => {
  const parsed = mustParseConfig('rollout:\n  maxConcurrent: 1\n  canary: {count: 0}\n');
  return { config: parsed, revision: configRevision(parsed) };
})();

/** A Deployment whose rollout is complete and whose template was never stamped: outdated. */
function outdated(name: string): Workload {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NAMESPACE, generation: 2, resourceVersion: '10' },
    spec: {
      replicas: 1,
      template: {
        metadata: { labels: { app: name } },
        spec: { containers: [{ name, image: `${name}:1` }] },
      },
    },
    status: { observedGeneration: 2, replicas: 1, updatedReplicas: 1, availableReplicas: 1 },
  };
}

/** A Deployment we restarted to the current revision at `atMs`, still rolling: it holds a slot. */
function rolling(name: string, atMs: number): Workload {
  const stamp = {
    [OWNER_KIND]: 'Deployment',
    [OWNER_NAME]: name,
    [CONFIG_REVISION]: config.revision,
  };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name,
      namespace: NAMESPACE,
      generation: 3,
      resourceVersion: '11',
      annotations: { [RESTARTED_REVISION]: config.revision, [RESTARTED_AT]: formatTime(atMs) },
    },
    spec: {
      replicas: 1,
      template: {
        metadata: { labels: { app: name, [STAMPED]: 'true' }, annotations: stamp },
        spec: { containers: [{ name, image: `${name}:1` }] },
      },
    },
    status: { observedGeneration: 2, replicas: 2, updatedReplicas: 1, availableReplicas: 1 },
  };
}

/** The caches the wave reads, holding the workloads last given to `show`. */
function fleetView(): { view: WaveView; show: (workloads: Workload[]) => void } {
  const ns: V1Namespace = { metadata: { name: NAMESPACE, annotations: { [INJECT]: ENABLED } } };
  let owners = new OwnerIndex((name) => (name === NAMESPACE ? ns : undefined), 'outrigger-system');
  const configMap = {
    metadata: {
      name: 'outrigger-config',
      namespace: 'outrigger-system',
      resourceVersion: '1',
      // The wave completed here before: these tests make no ConfigMap writes.
      annotations: {
        [WAVE_STAGE]: `${config.revision} complete 2026-01-01T00:00:00Z`,
        [LAST_GOOD_REVISION]: config.revision,
      },
    },
  };
  const show = (workloads: Workload[]): void => {
    owners = new OwnerIndex((name) => (name === NAMESPACE ? ns : undefined), 'outrigger-system');
    owners.workloadsChanged('Deployment', { changed: workloads, deleted: [] });
  };
  const view: WaveView = {
    configMap: () => configMap,
    assess: (c, nowMs) => owners.assess(c, nowMs),
    assessSet: (c, set, nowMs) => owners.assessSet(c, set, nowMs),
    workload: (key) => owners.workload(key),
    podsSynced: () => true,
  };
  return { view, show };
}

/** The Event reasons the wave asked to write, in order (the Events API itself is a stub). */
function recordingEvents(): { events: EventRecorder; reasons: EventReason[] } {
  const reasons: EventReason[] = [];
  const api = {
    create: (_path: string, body: { reason?: string }) => {
      reasons.push(body.reason as EventReason);
      return Promise.resolve(body);
    },
  } as unknown as Pick<KubeApi, 'create'>;
  const events = new EventRecorder({
    api,
    acquireWrite: () => Promise.resolve(),
    onWrite: () => undefined,
    logger,
    instance: 'test',
  });
  return { events, reasons };
}

/**
 * A client whose every patch of a Deployment the API server refuses, as a
 * ValidatingAdmissionPolicy does; other calls find no API server.
 */
function refusingApps(): { apps: KubeApi; patches: () => number } {
  let patches = 0;
  const status = JSON.stringify({
    kind: 'Status',
    status: 'Failure',
    message: 'deployments.apps "a-refused" is forbidden: refused by the test policy',
    reason: 'Invalid',
    code: 422,
  });
  const down = unreachable();
  const apps = {
    patch: (
      path: string,
      ...rest: Parameters<KubeApi['patch']> extends [string, ...infer R] ? R : never
    ) => {
      if (!path.includes('/deployments/')) return down.patch(path, ...rest);
      patches += 1;
      return Promise.reject(new ApiError(422, status, `PATCH ${path}`));
    },
  } as unknown as KubeApi;
  return { apps, patches: () => patches };
}

interface Harness {
  /** The wave, built once as the controller builds it. */
  wave: WaveRunner;
  /** What the wave's caches hold from now on. */
  show: (workloads: Workload[]) => void;
  /** One step of the wave, with the write permission always granted. */
  step: () => Promise<Result>;
  reasons: EventReason[];
  metrics: ControllerMetrics;
  clock: () => number;
  /** Moves the wave's clock on, as if that much time had passed. */
  skip: (ms: number) => void;
}

/** A wave over `api`; its clock is the real one moved on by `skip`, or `fixedClock`. */
function harness(api: KubeApi, fixedClock?: () => number): Harness {
  let offset = 0;
  const { events, reasons } = recordingEvents();
  const metrics = new ControllerMetrics();
  const { view, show } = fleetView();
  const clock = fixedClock ?? ((): number => Date.now() + offset);
  const wave = new WaveRunner({
    api,
    view,
    configMapRef: { namespace: 'outrigger-system', name: 'outrigger-config' },
    clock,
    onWrite: () => undefined,
    onWritten: () => undefined,
    onJudging: () => undefined,
    events,
    webhookReady: () => Promise.resolve(true),
    metrics,
    logger,
  });
  const step = () => wave.step(config, () => Promise.resolve());
  return { wave, show, step, reasons, metrics, clock, skip: (ms) => (offset += ms) };
}

/**
 * Fires every 10 ms and keeps the longest wait between two fires: when something holds the
 * event loop (a chain of promise callbacks that never ends), no timer fires and the gap shows.
 */
class Heartbeat {
  private last = performance.now();
  private timer: NodeJS.Timeout | undefined;
  beats = 0;
  maxGapMs = 0;

  start(): void {
    this.last = performance.now();
    this.timer = setInterval(() => this.beat(), 10);
  }

  private beat(): void {
    const now = performance.now();
    this.maxGapMs = Math.max(this.maxGapMs, now - this.last);
    this.last = now;
    this.beats += 1;
  }

  stop(): void {
    clearInterval(this.timer);
    this.beat();
  }
}

interface Run {
  /** Reconciles started while the run lasted. */
  runs: number;
  events: ReconcileEvent[];
  heartbeat: Heartbeat;
}

/**
 * Runs the key through a WorkQueue on the real clock for `ms`, with a heartbeat. Once the time
 * is up the reconcile ends the key with `done`, so even a queue that never yields stops, and
 * the test reports the hang instead of hanging.
 */
async function runFor(
  ms: number,
  reconcile: (key: string, queue: WorkQueue) => Promise<Result>,
): Promise<Run> {
  const endAt = Date.now() + ms;
  const events: ReconcileEvent[] = [];
  let runs = 0;
  const queue: WorkQueue = new WorkQueue({
    reconcile: (key) => {
      if (Date.now() >= endAt) return Promise.resolve({ done: true });
      runs += 1;
      return reconcile(key, queue);
    },
    onReconcile: (event) => events.push(event),
  });
  const heartbeat = new Heartbeat();
  heartbeat.start();
  queue.start();
  queue.add(WAVE_KEY);
  await new Promise((resolve) => setTimeout(resolve, ms + 50));
  heartbeat.stop();
  await queue.stop();
  return { runs, events, heartbeat };
}

/** The event loop turned all along: the heartbeat fired, never more than 250 ms apart. */
function expectResponsive(run: Run): void {
  expect(run.heartbeat.beats).toBeGreaterThan(20);
  expect(run.heartbeat.maxGapMs).toBeLessThan(250);
}

const ownerKey = (name: string): string => `${NAMESPACE}/Deployment/${name}`;

describe('WorkQueue on the real clock', () => {
  it.each([
    ['asks to run again after 0 ms', (): Promise<Result> => Promise.resolve({ requeueAfterMs: 0 })],
    [
      'adds itself again while it runs',
      (key: string, queue: WorkQueue): Promise<Result> => {
        queue.add(key);
        return Promise.resolve({ done: true });
      },
    ],
  ])('a key that %s still lets timers run between its runs', async (_what, reconcile) => {
    const run = await runFor(1000, reconcile);
    // It did run again and again (the queue honoured the request), yet the loop kept turning.
    expect(run.runs).toBeGreaterThan(10);
    expectResponsive(run);
  });
});

describe('the wave with a full budget', () => {
  it('a refused owner whose back-off ran out, waiting for a slot, does not ask to run at once', async () => {
    const { apps, patches } = refusingApps();
    const h = harness(apps);
    // The policy refuses a-refused's restart: a Warning Event and a back-off.
    h.show([outdated('a-refused')]);
    await h.step();
    expect(patches()).toBe(1);
    expect(h.reasons).toEqual(['RestartFailed']);
    expect(h.wave.failures.get(ownerKey('a-refused'))?.count).toBe(1);

    // b-slow took the one slot and rolls for a while; a-refused's back-off runs out meanwhile.
    h.skip(6000);
    h.show([outdated('a-refused'), rolling('b-slow', h.clock())]);
    const result = await h.step();
    expect(patches()).toBe(1);
    // Nothing can change before b-slow's rollout does (an event) or its deadline passes.
    expect('requeueAfterMs' in result && result.requeueAfterMs).toBeGreaterThanOrEqual(FLOOR_MS);
  });

  it('refused owner + full budget: the event loop stays responsive and the wave runs a bounded number of times', async () => {
    const { apps } = refusingApps();
    const h = harness(apps);
    h.show([outdated('a-refused')]);
    await h.step();
    expect(h.wave.failures.get(ownerKey('a-refused'))).toBeDefined();

    h.skip(6000);
    h.show([outdated('a-refused'), rolling('b-slow', h.clock())]);
    const run = await runFor(1500, () => h.step());
    expect(run.runs).toBeGreaterThanOrEqual(1);
    // One step, then a wait for b-slow's deadline; a floor of 1 s allows two at most.
    expect(run.runs).toBeLessThanOrEqual(2);
    expectResponsive(run);
  });
});

describe('the wave with the API server unreachable mid-wave', () => {
  const owners = ['a', 'b', 'c'];
  /** The wave over three outdated owners while every write fails to connect. */
  const outage = (h: Harness): Promise<Run> => {
    h.show(owners.map(outdated));
    return runFor(1000, () => h.step());
  };

  it('retries a write that cannot connect through the queue, and marks no owner refused', async () => {
    const h = harness(unreachable());
    const down = await outage(h);
    // The failed write came back to the queue as an error, retried with the queue's back-off.
    const retries = down.events.filter((e) => e.outcome === 'retry');
    expect(retries.length).toBeGreaterThanOrEqual(2);
    expect(retries.length).toBeLessThanOrEqual(6);
    expectResponsive(down);
    // ... and was not the owner's refusal: no back-off, no Event, no failure counted.
    expect([...h.wave.failures.keys()]).toEqual([]);
    expect(h.reasons).toEqual([]);
    expect(await h.metrics.writeFailures.get()).toMatchObject({ values: [] });
  });

  it('once the API server is back and a restart holds the one slot, the wave waits without spinning', async () => {
    const h = harness(unreachable());
    await outage(h);
    // The API server is back: a's restart went through and a rolls, holding the one slot,
    // while whatever the outage left behind for b and c has run out.
    h.skip(6000);
    h.show([rolling('a', h.clock()), outdated('b'), outdated('c')]);
    const back = await runFor(1500, () => h.step());
    expect(back.runs).toBeGreaterThanOrEqual(1);
    expect(back.runs).toBeLessThanOrEqual(2);
    expectResponsive(back);
  });
});

describe('the wave with a back-off still running', () => {
  it('asks to be run again when the back-off ends', async () => {
    const h = harness(refusingApps().apps);
    h.wave.failures.set(ownerKey('a-refused'), { count: 1, untilMs: h.clock() + 3000 });
    h.show([outdated('a-refused')]);
    const result = await h.step();
    expect('requeueAfterMs' in result && result.requeueAfterMs).toBeGreaterThan(2000);
    expect('requeueAfterMs' in result && result.requeueAfterMs).toBeLessThanOrEqual(3000);
  });

  it('wakes the wave for a back-off that ends while the step runs, after the floor', async () => {
    // Each reading of the wave's clock is 100 ms after the last: the back-off, which kept the
    // owner out of the plan, has ended by the time the step decides when to run again.
    const base = Date.now();
    let readings = 0;
    const h = harness(refusingApps().apps, () => base + 100 * readings++);
    h.wave.failures.set(ownerKey('a-refused'), { count: 1, untilMs: base + 50 });
    h.show([outdated('a-refused')]);
    const result = await h.step();
    expect(readings).toBeGreaterThanOrEqual(2);
    expect(result).toEqual({ requeueAfterMs: FLOOR_MS });
  });
});
