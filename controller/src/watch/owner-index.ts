// Every owner the controller knows, kept current by the watches' deltas: its workload (slim,
// with our own latest write laid over a stale cache entry), its pods, and its assessment. An
// event marks the owners it touches; the next wave step assesses those again and no others, and
// plans over the owners that can matter (shared/src/rollout/quiet-owners.ts). The owners restarted by a
// wave in flight are assessed every step, as their deadlines move with the clock. Only a new
// configuration assesses every owner again. So one owner's event costs the same in a cluster
// of ten thousand owners as in one of ten, and the per-state counts are kept as they change.

import type { V1Namespace, V1Pod } from '@kubernetes/client-node';
import type { WatchDelta } from '@outrigger/kube';
import {
  OWNER_STATES,
  RESTARTED_AT,
  assessOwner,
  parseTime,
  injectedContainerNames,
  ownerKey,
  quietness,
  readStamp,
  countPodsByOwner,
  setOfStampKey,
  setGateNames,
  setRolloutConfig,
  type AppliedSet,
  type PodLike,
  setHistoryKey,
  templateOf,
  type FleetOwners,
  type OwnerAssessment,
  type OwnerState,
  type Quietness,
  type StampedKind,
  type Workload,
  namespaceMeta,
} from '@outrigger/shared';
import type { ConfigInForce } from '../config/config-map';
import { countPods, noPods, podOwnerKey } from './pods';

export type PodSet = 'escaped' | 'injected';

/** A workload as our own write left it, until the cache shows that write or a later one. */
interface Written {
  before: string | undefined;
  after: Workload;
}

interface Entry {
  assessment: OwnerAssessment;
  quietness: Quietness;
}

/** What a wave step reads of the owners. */
export interface AssessedFleet extends FleetOwners {
  /** Owners by state, every owner counted. */
  states: ReadonlyMap<OwnerState, number>;
}

/** The key of a workload of `kind` (the watch's: the cached object may not name it). */
const workloadKey = (workload: Workload, kind = workload.kind): string =>
  ownerKey({
    namespace: workload.metadata?.namespace ?? '',
    kind,
    name: workload.metadata?.name ?? '',
  });

const podKey = (p: V1Pod): string => `${p.metadata?.namespace ?? ''}/${p.metadata?.name ?? ''}`;

/** One selected set of pods, grouped by the owner each counts for. */
class PodsByOwner {
  private readonly ownerOf = new Map<string, string>();
  private readonly byOwner = new Map<string, Map<string, V1Pod>>();

  /** Applies a delta; returns the owners whose pods changed. */
  apply(delta: WatchDelta<V1Pod>, touched: Set<string>): void {
    for (const pod of delta.deleted) this.remove(podKey(pod), touched);
    for (const pod of delta.changed) {
      const key = podKey(pod);
      const owner = podOwnerKey(pod);
      if (this.ownerOf.get(key) !== owner) this.remove(key, touched);
      if (owner === undefined) continue;
      this.ownerOf.set(key, owner);
      let pods = this.byOwner.get(owner);
      if (!pods) this.byOwner.set(owner, (pods = new Map<string, V1Pod>()));
      pods.set(key, pod);
      touched.add(owner);
    }
  }

  /** Every pod replaced by these (a watch with a new selector). */
  reset(pods: Iterable<V1Pod>, touched: Set<string>): void {
    for (const owner of this.byOwner.keys()) touched.add(owner);
    this.ownerOf.clear();
    this.byOwner.clear();
    this.apply({ changed: [...pods], deleted: [] }, touched);
  }

  of(owner: string): Iterable<V1Pod> {
    return this.byOwner.get(owner)?.values() ?? [];
  }

  private remove(key: string, touched: Set<string>): void {
    const owner = this.ownerOf.get(key);
    if (owner === undefined) return;
    this.ownerOf.delete(key);
    const pods = this.byOwner.get(owner);
    pods?.delete(key);
    if (pods?.size === 0) this.byOwner.delete(owner);
    touched.add(owner);
  }
}

export class OwnerIndex {
  private readonly workloads = new Map<string, Workload>();
  private readonly written = new Map<string, Written>();
  private readonly byNamespace = new Map<string, Set<string>>();
  private readonly pods: Record<PodSet, PodsByOwner> = {
    escaped: new PodsByOwner(),
    injected: new PodsByOwner(),
  };
  private readonly entries = new Map<string, Entry>();
  private readonly classes: Record<Quietness, Set<string>> = {
    quiet: new Set(),
    'in-wave': new Set(),
    active: new Set(),
  };
  /** Owners whose assessment reads the clock: a restart of ours in flight. */
  private readonly timed = new Set<string>();
  private readonly stateCounts = new Map<OwnerState, number>(OWNER_STATES.map((s) => [s, 0]));
  private dirty = new Set<string>();
  private basis: ConfigInForce | undefined;

  constructor(
    private readonly namespace: (name: string) => V1Namespace | undefined,
    private readonly systemNamespace: string,
  ) {}

  get size(): number {
    return this.workloads.size;
  }

  /** Owners by state, every owner assessed counted. */
  get states(): ReadonlyMap<OwnerState, number> {
    return this.stateCounts;
  }

  /** Owners waiting to be assessed again; for tests and the bench. */
  get pending(): number {
    return this.dirty.size;
  }

  workloadsChanged(kind: StampedKind, delta: WatchDelta<Workload>): boolean {
    for (const w of delta.deleted) {
      const key = workloadKey(w, kind);
      this.workloads.delete(key);
      this.written.delete(key);
      this.byNamespace.get(w.metadata?.namespace ?? '')?.delete(key);
      this.dirty.add(key);
    }
    for (const w of delta.changed) {
      const key = workloadKey(w, kind);
      this.workloads.set(key, w);
      // The cache moved past the version our write replaced: the overlay has nothing left to say.
      const mine = this.written.get(key);
      if (mine && mine.before !== w.metadata?.resourceVersion) this.written.delete(key);
      const ns = w.metadata?.namespace ?? '';
      let keys = this.byNamespace.get(ns);
      if (!keys) this.byNamespace.set(ns, (keys = new Set()));
      keys.add(key);
      this.dirty.add(key);
    }
    return delta.changed.length + delta.deleted.length > 0;
  }

  /** A namespace's labels decide the scope of every owner in it. */
  namespacesChanged(names: Iterable<string>): void {
    for (const name of names)
      for (const key of this.byNamespace.get(name) ?? []) this.dirty.add(key);
  }

  podsChanged(set: PodSet, delta: WatchDelta<V1Pod>): void {
    this.pods[set].apply(delta, this.dirty);
  }

  podsReplaced(set: PodSet, pods: Iterable<V1Pod>): void {
    this.pods[set].reset(pods, this.dirty);
  }

  /** Our writes the cache does not show yet; for tests and the bench. */
  get overlaid(): number {
    return this.written.size;
  }

  /** Our write, which the cache will show later. */
  wrote(before: Workload, after: Workload): void {
    const key = workloadKey(after);
    this.written.set(key, { before: before.metadata?.resourceVersion, after });
    this.dirty.add(key);
  }

  /** The workload as the wave should read it: our write while the cache still shows the version it replaced. */
  workload(key: string): Workload | undefined {
    const cached = this.workloads.get(key);
    const mine = this.written.get(key);
    if (!cached || !mine) return cached;
    if (cached.metadata?.resourceVersion === mine.before) return mine.after;
    this.written.delete(key);
    return cached;
  }

  /** The revisions owners' templates are pinned to, which the history keeps. */
  pinnedRevisions(): Set<string> {
    const pinned = new Set<string>();
    for (const key of this.workloads.keys()) {
      const revision = readStamp(this.workload(key) ?? {})?.revision;
      if (revision) pinned.add(revision);
    }
    return pinned;
  }

  /** The sets' revisions owners' templates are pinned to, as history keys (`<set>.<revision>`). */
  pinnedSetRevisions(): Set<string> {
    const pinned = new Set<string>();
    for (const key of this.workloads.keys()) {
      const annotations = templateOf(this.workload(key) ?? {})?.metadata?.annotations ?? {};
      for (const [k, v] of Object.entries(annotations)) {
        const set = setOfStampKey(k);
        if (set !== undefined) pinned.add(setHistoryKey(set, v));
      }
    }
    return pinned;
  }

  /**
   * Assesses the owners an event marked, at once, and says whether the wave must look: whether
   * one of them is, or was, an owner the planner reads (`waveComplete`: the wave is recorded
   * complete, so owners it restarted are quiet too). A status change of a quiet owner that
   * leaves it quiet changes no plan: no wave step for it.
   */
  assessMarked(config: ConfigInForce, nowMs: number, waveComplete: boolean): boolean {
    const matters = (q: Quietness | undefined): boolean =>
      q === 'active' || (q === 'in-wave' && !waveComplete);
    if (config !== this.basis) return true;
    let mustPlan = false;
    const names = injectedContainerNames(config.config);
    for (const key of this.dirty) {
      const before = this.entries.get(key)?.quietness;
      this.reassess(key, config, nowMs, names);
      mustPlan ||= matters(before) || matters(this.entries.get(key)?.quietness);
    }
    this.dirty.clear();
    return mustPlan;
  }

  /** Assesses the owners marked since the last call (all of them after a new configuration). */
  assess(config: ConfigInForce, nowMs: number): AssessedFleet {
    if (config !== this.basis) {
      this.basis = config;
      this.dirty = new Set([...this.entries.keys(), ...this.workloads.keys()]);
    }
    for (const key of this.timed) this.dirty.add(key);
    const names = injectedContainerNames(config.config);
    for (const key of this.dirty) this.reassess(key, config, nowMs, names);
    this.dirty.clear();
    const pick = (quiet: Quietness) =>
      [...this.classes[quiet]].flatMap((key) => {
        const e = this.entries.get(key);
        return e ? [e.assessment] : [];
      });
    return { active: pick('active'), inWave: pick('in-wave'), states: this.stateCounts };
  }

  /**
   * Every owner assessed for one sidecar set, at once: those that can matter, by quietness (the
   * set's waves are assessed whole each step; docs/controller.md, "Sidecar sets").
   */
  assessSet(config: ConfigInForce, set: AppliedSet, nowMs: number): FleetOwners {
    const setConfig = setRolloutConfig(config.config, set);
    const names = setGateNames(set);
    const active: OwnerAssessment[] = [];
    const inWave: OwnerAssessment[] = [];
    for (const key of this.workloads.keys()) {
      const workload = this.workload(key);
      const ns = workload && this.namespace(workload.metadata?.namespace ?? '');
      if (!workload || !ns) continue;
      const pods =
        countPodsByOwner(this.podsOf(key), {
          revision: set.revision,
          label: set.keys.podRevision,
          names,
          sinceOf: () => parseTime(workload.metadata?.annotations?.[set.keys.restartedAt]),
          fresh: noPods,
        }).get(key) ?? noPods();
      const assessment = assessOwner({
        workload,
        namespace: namespaceMeta(ns),
        config: setConfig,
        revision: set.revision,
        pods,
        nowMs,
        systemNamespace: this.systemNamespace,
        set,
      });
      const q = quietness(assessment);
      if (q === 'active') active.push(assessment);
      else if (q === 'in-wave') inWave.push(assessment);
    }
    return { active, inWave };
  }

  /** Both selected sets of an owner's pods. */
  private *podsOf(key: string): Iterable<PodLike> {
    for (const p of this.pods.escaped.of(key)) yield p as PodLike;
    for (const p of this.pods.injected.of(key)) yield p as PodLike;
  }

  private reassess(
    key: string,
    config: ConfigInForce,
    nowMs: number,
    names: { proxy: string; init?: string },
  ): void {
    this.forget(key);
    const workload = this.workload(key);
    const ns = workload && this.namespace(workload.metadata?.namespace ?? '');
    // An owner whose namespace the cache does not have yet is assessed once it arrives.
    if (!workload || !ns) return;
    const pods =
      countPods(
        { escaped: this.pods.escaped.of(key), injected: this.pods.injected.of(key) },
        config.revision,
        names,
        parseTime(workload.metadata?.annotations?.[RESTARTED_AT]),
      ).get(key) ?? noPods();
    const assessment = assessOwner({
      workload,
      namespace: namespaceMeta(ns),
      config: config.config,
      revision: config.revision,
      pods,
      nowMs,
      systemNamespace: this.systemNamespace,
    });
    const q = quietness(assessment);
    this.entries.set(key, { assessment, quietness: q });
    this.classes[q].add(key);
    if (assessment.inFlight) this.timed.add(key);
    this.stateCounts.set(assessment.state, (this.stateCounts.get(assessment.state) ?? 0) + 1);
  }

  private forget(key: string): void {
    const old = this.entries.get(key);
    if (!old) return;
    this.entries.delete(key);
    this.classes[old.quietness].delete(key);
    this.timed.delete(key);
    const state = old.assessment.state;
    this.stateCounts.set(state, (this.stateCounts.get(state) ?? 1) - 1);
  }
}
