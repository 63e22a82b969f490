// What the suites read of a component's /metrics: samples, sums, the names it exports, and the
// controller's own signal that it has caught up with a change (so an absence can be asserted).

import { MERGE_PATCH, type Cluster } from './cluster';
import { probe } from './http-probe';
import { done, pending, waitFor } from './wait';

/** The samples of a Prometheus metric on a process's /metrics, by their label text. */
export async function metricSamples(port: number, name: string): Promise<Map<string, number>> {
  const { body } = await probe(`http://127.0.0.1:${port}/metrics`);
  const out = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest !== '' && !rest.startsWith('{') && !rest.startsWith(' ')) continue;
    const labels = rest.startsWith('{') ? rest.slice(0, rest.indexOf('}') + 1) : '';
    out.set(labels, Number(line.split(' ').at(-1)));
  }
  return out;
}

/**
 * Every metric name a process's /metrics exposes, as a query names it: a histogram's with its
 * _bucket, _sum and _count series.
 */
export async function metricNames(port: number): Promise<Set<string>> {
  const { body } = await probe(`http://127.0.0.1:${port}/metrics`);
  const names = new Set<string>();
  for (const match of body.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name = '', type] = match;
    names.add(name);
    if (type === 'histogram' || type === 'summary')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/**
 * Waits until the controller has caught up with what happened before this call. `nudge` makes a
 * change it watches on `resource` (as outrigger_controller_watch_events_total labels it); once an
 * event of that watch is counted after it (the nudge's own, unless another change on the same
 * resource came first), every earlier event of the watch has reached the controller, and once its
 * queue is empty with no reconcile running, on two polls in a row (a watch delivers a turn of the
 * event loop after it counts), it has done all it was going to do about them. An absence asserted
 * after this is the controller's decision, not a write still to come. The queue's depth counts
 * delayed keys too: where a recheck is pending (a gate, a soak, a closed window, self-managed
 * certificates) the queue is never empty and this fails at its deadline; use waveStepFinished.
 */
export async function controllerCaughtUp(
  port: number,
  resource: string,
  nudge: () => Promise<unknown>,
): Promise<void> {
  const label = `{resource="${resource}"}`;
  const events = async () => (await metricSamples(port, WATCH_EVENTS)).get(label) ?? 0;
  const before = await events();
  await nudge();
  let idleBefore = false;
  await waitFor(
    `the controller to see a change on ${resource} and go idle`,
    async () => {
      const [seen, depth, running] = await Promise.all([
        events(),
        metricSum(port, 'outrigger_controller_queue_depth'),
        metricSum(port, 'outrigger_controller_reconciles_running'),
      ]);
      const idle = seen > before && depth === 0 && running === 0;
      const settled = idle && idleBefore;
      idleBefore = idle;
      return settled ? done(undefined) : pending({ seen, before, depth, running });
    },
    { intervalMs: 100 },
  );
}

const WATCH_EVENTS = 'outrigger_controller_watch_events_total';

/**
 * Resolves once a wave step has finished after the call. A step that had already decided (say,
 * reported an owner's state) has by then made every write it decided on; use it where the
 * controller keeps a recheck pending, so its queue is never empty for controllerCaughtUp.
 */
export async function waveStepFinished(port: number): Promise<void> {
  const steps = async () => {
    const samples = await metricSamples(port, 'outrigger_controller_reconciles_total');
    return [...samples].reduce((n, [labels, v]) => (labels.includes('kind="Wave"') ? n + v : n), 0);
  };
  const before = await steps();
  await waitFor('a wave step to finish', async () => {
    const now = await steps();
    return now > before ? done(undefined) : pending({ before, now });
  });
}

/** The sum of a metric's samples (0 when it has none). */
export async function metricSum(port: number, name: string): Promise<number> {
  return [...(await metricSamples(port, name)).values()].reduce((a, b) => a + b, 0);
}

/** Each nudge writes a value no earlier one did, so each is a change and a watch event. */
let nudges = 0;

/** A change the controller watches and ignores: an annotation of the test's own on a Deployment. */
export function nudgeDeployment(
  cluster: Cluster,
  namespace: string,
  name: string,
): () => Promise<unknown> {
  return () => {
    const annotations = { 'e2e.outrigger.test/nudge': `${process.pid}-${++nudges}` };
    return cluster.apps.patchNamespacedDeployment(
      { namespace, name, body: { metadata: { annotations } } },
      MERGE_PATCH,
    );
  };
}
