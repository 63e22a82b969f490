// One owner's restart for every wave that restarts it in a step: the proxy's and each sidecar
// set's orders become one write, so two sets due at once cost the owner one rollout, not two.
// The write also stamps the sets (and the proxy) whose stamp the template lacks with the revision
// its pods get anyway (absent a stamp, the webhook gives the current one), so that no later wave
// restarts the owner only to stamp it. Then the metrics, one log line and an Event per wave.

import {
  NO_REVISION,
  desiredStamp,
  mergePatches,
  ownerKey,
  readStamp,
  restartPatch,
  stampMergePatch,
  type FleetOwners,
  type RestartOrder,
  type Workload,
} from '@outrigger/shared';
import { workloadSubject } from '../events';
import type { ActedOn, WaveDeps, WaveOf } from './wave-contract';
import { RESTART_EVENT, restartMessage } from './wave-messages';
import type { WaveWrites } from './wave-writes';

/** One wave's order for the owner, with the report's detail of it. */
export interface WaveOrder {
  wave: WaveOf;
  order: RestartOrder;
  detail: string;
}

/** One wave of the step as the restarts read it. */
export interface PlannedWave {
  wave: WaveOf;
  plan: ActedOn;
}

/**
 * The orders of every wave, by owner, in the waves' order: the proxy's first, then the sets' in
 * applied order. A restart a wave holds for its budget alone joins the owner's restart by
 * another wave: the owner rolls anyway, so it adds no rollout (and takes no slot it has not).
 */
export function ordersByOwner(
  waves: readonly PlannedWave[],
  details: (wave: WaveOf, key: string) => string,
): Map<string, WaveOrder[]> {
  const byOwner = new Map<string, WaveOrder[]>();
  for (const { wave, plan } of waves)
    for (const order of plan.restart) {
      const key = ownerKey(order.owner);
      const list = byOwner.get(key) ?? [];
      list.push({ wave, order, detail: details(wave, key) });
      byOwner.set(key, list);
    }
  for (const { wave, plan } of waves)
    for (const order of plan.joinable) {
      const list = byOwner.get(ownerKey(order.owner));
      if (!list || list.some((o) => o.wave === wave)) continue;
      const by = list[0]?.wave.keys.set ?? '';
      list.push({ wave, order, detail: `joined the restart made for ${by}` });
    }
  return byOwner;
}

/** The one write of an owner's restart for all its orders. */
export function ownerRestartPatch(
  workload: Workload,
  orders: readonly WaveOrder[],
  waves: readonly PlannedWave[],
  nowMs: number,
): Record<string, unknown> {
  let body: Record<string, unknown> = {};
  for (const { wave, order } of orders)
    body = mergePatches(body, restartPatch({ workload, order, nowMs, keys: wave.keys }));
  return mergePatches(body, missingStamps(workload, orders, waves));
}

/** The stamps the template lacks of the waves that do not restart the owner: what its pods get. */
function missingStamps(
  workload: Workload,
  orders: readonly WaveOrder[],
  waves: readonly PlannedWave[],
): Record<string, unknown> {
  const [first] = orders;
  if (!first) return {};
  const key = ownerKey(first.order.owner);
  const ordered = new Set(orders.map((o) => o.wave));
  const missing: Record<string, string> = {};
  for (const { wave, plan } of waves)
    if (wave.set && !ordered.has(wave) && plan.unstamped.has(key))
      missing[wave.keys.configRevision] = wave.revision;
  const sets = { spec: { template: { metadata: { annotations: missing } } } };
  // The proxy's stamp names the owner too; a restart that sheds the proxy takes it off instead.
  const proxy = waves[0]?.wave;
  const shed = orders.some((o) => o.order.kind === 'shed' && o.wave.set === undefined);
  if (shed || !proxy || ordered.has(proxy) || readStamp(workload)) return sets;
  return mergePatches(stampMergePatch(desiredStamp(workload, proxy.revision)), sets);
}

/** Restarts the owner for all its orders, then counts, logs and tells each. */
export async function restartOwner(
  deps: WaveDeps,
  writes: WaveWrites,
  restart: { workload: Workload; orders: readonly WaveOrder[]; waves: readonly PlannedWave[] },
  nowMs: number,
): Promise<void> {
  const { workload, orders, waves } = restart;
  const written = await writes.patchWorkload(
    workload,
    ownerRestartPatch(workload, orders, waves, nowMs),
  );
  if (!written) return;
  for (const { wave, order } of orders) {
    if (wave.set) deps.metrics.sets.restarts.inc({ set: wave.keys.set, kind: order.kind });
    else {
      deps.metrics.restarts.inc({ kind: order.kind });
      if (order.kind === 'rollback') deps.metrics.rollbacks.inc();
    }
  }
  const first = orders[0];
  deps.logger.info('restarted', {
    owner: first ? ownerKey(first.order.owner) : '',
    kind: first?.order.kind,
    revision: first?.order.revision,
    sets: orders.map((o) => `${o.wave.keys.set}=${o.order.revision}`).join(','),
    detail: orders.map((o) => o.detail).join('; '),
  });
  for (const { wave, order, detail } of orders)
    await deps.events.record({
      subject: workloadSubject(workload),
      type: 'Normal',
      reason: RESTART_EVENT[order.kind],
      message: wave.set
        ? `set ${wave.keys.set}: ${restartMessage(order, detail)}`
        : restartMessage(order, detail),
      once: null,
    });
}

/**
 * The restarts of a wave that may join another wave's restart of the owner, by owner: a rollout
 * or a heal to the wave's revision, nothing else. A rollback or a shed held by the budget is not
 * joined (its order carries more than the revision), nor is a canary (its mark is the stage's).
 */
export function joinableOwners(owners: FleetOwners, wave: WaveOf): Map<string, RestartOrder> {
  const joins = new Map<string, RestartOrder>();
  for (const a of owners.active) {
    const kind = a.due?.kind;
    if ((kind === 'rollout' || kind === 'heal') && a.target === wave.revision && !a.canary)
      joins.set(ownerKey(a.owner), { owner: a.owner, kind, revision: wave.revision });
  }
  return joins;
}

/** Owners in a set's scope whose template lacks the set's stamp. */
export function unstampedOf(owners: FleetOwners): ReadonlySet<string> {
  const keys = new Set<string>();
  for (const a of owners.active)
    if (a.pinned === undefined && a.target !== NO_REVISION) keys.add(ownerKey(a.owner));
  return keys;
}
