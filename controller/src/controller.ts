// The controller's shell: caches fed by the watches' deltas (namespaces; the three workload kinds
// and the two selected sets of pods, kept by owner in owner-index.ts; the configuration
// ConfigMap), and a work queue that exists only while this replica leads. Handlers turn changes
// into keys: `Namespace/<name>` for the opt-in label, the one wave key for everything the wave
// depends on, and, in self-managed mode, the one certificates key, in the policy modes the one
// policies key (keepers.ts). Followers keep the caches
// warm; a new leader enqueues every key, as whatever happened while it did not lead must be
// looked at again.

import type {
  V1ConfigMap,
  V1MutatingWebhookConfiguration,
  V1Namespace,
  V1Pod,
  V1Secret,
} from '@kubernetes/client-node';
import type { KubeApi, ObjectRef, WatchDelta } from '@outrigger/kube';
import {
  historyConfigMapName,
  readWave,
  waveComplete,
  type StampedKind,
  type Workload,
} from '@outrigger/shared';
import { ObjectCache } from './watch/cache';
import { CERTIFICATES_KEY, type CertificateKeeper } from './certificates/certificate-keeper';
import { makeKeepers } from './keepers';
import type { CertificateFlags } from './flags';
import { ConfigHolder, type ConfigInForce } from './config/config-map';
import { ConfigProblems } from './config/config-problems';
import { EventRecorder } from './events';
import { HISTORY_KEY, reconcileHistory } from './config/history';
import { POLICIES_KEY, type PolicyKeeper, type PolicyFlags } from './policies/policy-keeper';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import {
  NAMESPACE_KEY_KIND,
  namespaceKey,
  namespaceOfKey,
  reconcileNamespace,
  reportLabelWrite,
} from './namespace';
import { OwnerIndex, type PodSet } from './watch/owner-index';
import { NO_POD_WATCH, PodSelection, type InjectedPodWatch } from './watch/injected-pods';
import type { WatchHandler } from './watch/watches';
import { probeReady } from './wave/webhook-probe';
import { TerminalError, WorkQueue, WriteLimiter, type Result } from './watch/queue';
import { WAVE_KEY, WaveRunner } from './wave/wave-runner';

/** The global write limit: a first start over thousands of namespaces must not flood the API. */
export const WRITE_LIMIT = { ratePerSecond: 20, burst: 50 };
/** Changes within this window make one wave step, not one each. */
const WAVE_BATCH_MS = 100;

export interface ControllerOptions {
  api: KubeApi;
  /** The namespace Outrigger runs in: never labelled, never injected. */
  systemNamespace: string;
  configMap: ObjectRef;
  logger: Logger;
  metrics: ControllerMetrics;
  /** This replica's name in Events and the Lease. */
  identity: string;
  clock?: () => number;
  /** The webhook's readiness URL: heals wait until it answers. */
  webhookReadyUrl?: string;
  /** Self-managed certificates, when set. */
  certificates?: CertificateFlags;
  /** The admission-policy mode, when set: policies compiled from the pinned revisions. */
  policies?: PolicyFlags;
  writeLimit?: { ratePerSecond: number; burst: number };
  /** Makes the injected-pod watch this controller steers (none: no pods are watched). */
  injectedPods?: (controller: Controller) => InjectedPodWatch;
  /**
   * Whether the Lease is still held and recently renewed (default: always); checked before
   * every write, since the queue stops only after the elector notices, which may be a renewal
   * period late.
   */
  mayWrite?: () => boolean;
}

/** The kind of a key (its part before the first slash): Namespace, Wave, History or Certificates. */
const kindOfKey = (key: string): string => key.split('/')[0] ?? 'unknown';

export class Controller implements WatchHandler {
  readonly namespaces = new ObjectCache<V1Namespace>();
  /** Every owner: its workload, its pods and its assessment. */
  readonly owners: OwnerIndex;
  readonly config: ConfigHolder;
  /** Keeps the webhook's certificates, in self-managed mode. */
  readonly certificates: CertificateKeeper | undefined;
  /** Keeps the admission policies, in the policy and both modes. */
  readonly policies: PolicyKeeper | undefined;
  readonly injectedPods: InjectedPodWatch;
  private readonly podSelection: PodSelection;
  /** The revision history ConfigMap, as the watch last saw it. */
  private history: V1ConfigMap | undefined;
  private queue: WorkQueue | undefined;
  /** The wave, built once: it keeps what one step remembers for the next. */
  private readonly wave: WaveRunner;
  private readonly limiter: WriteLimiter;
  private readonly events: EventRecorder;
  private readonly clock: () => number;
  private readonly problems: ConfigProblems;
  private broken = false;

  constructor(private readonly options: ControllerOptions) {
    this.config = new ConfigHolder(options.configMap);
    this.injectedPods = options.injectedPods?.(this) ?? NO_POD_WATCH;
    this.podSelection = new PodSelection(this.injectedPods);
    this.owners = new OwnerIndex((name) => this.namespaces.get(name), options.systemNamespace);
    this.clock = options.clock ?? Date.now;
    this.limiter = new WriteLimiter(options.writeLimit ?? WRITE_LIMIT);
    this.events = new EventRecorder({
      api: this.options.api,
      acquireWrite: () => this.acquireWrite(this.queue),
      onWrite: () => options.metrics.writes.inc({ resource: 'events', verb: 'create' }),
      logger: options.logger,
      instance: options.identity,
      clock: this.clock,
    });
    this.problems = new ConfigProblems({
      configMap: options.configMap,
      logger: options.logger,
      metrics: options.metrics,
      events: this.events,
      leading: () => this.queue !== undefined,
    });
    const keepers = makeKeepers({
      ...options,
      clock: this.clock,
      acquireWrite: () => this.acquireWrite(this.queue),
      policyInputs: () => ({
        config: this.config.inForce,
        history: this.history,
        inUse: this.owners.pinnedRevisions(),
        setsInUse: this.owners.pinnedSetRevisions(),
      }),
    });
    this.certificates = keepers.certificates;
    this.policies = keepers.policies;
    for (const [key, reconcile] of keepers.reconcilers) this.reconcilers.set(key, reconcile);
    this.wave = this.buildWave();
    options.metrics.leader.set(0);
  }

  /** The policies are compiled again when what they are compiled from changed. */
  private policiesChanged(): void {
    if (this.policies?.changed()) this.queue?.add(POLICIES_KEY);
  }

  /** The wave reads the caches as they stand, with our own latest writes laid over stale entries. */
  private buildWave(): WaveRunner {
    const { api, metrics, logger, webhookReadyUrl: url } = this.options;
    return new WaveRunner({
      api,
      configMapRef: this.options.configMap,
      clock: this.clock,
      view: {
        configMap: () => this.config.configMap,
        assess: (config, nowMs) => this.owners.assess(config, nowMs),
        assessSet: (config, set, nowMs) => this.owners.assessSet(config, set, nowMs),
        workload: (key) => this.owners.workload(key),
        // The gate reads the pods at the revision, which only the widened selector lists.
        podsSynced: () => this.podSelection.wideAndSynced,
      },
      onWrite: (resource, verb) => metrics.writes.inc({ resource, verb }),
      onWritten: (before, after) => this.owners.wrote(before, after),
      events: this.events,
      // Asked only when a heal is planned: a steady cluster makes no calls at all.
      webhookReady: url ? () => probeReady(url) : () => Promise.resolve(true),
      metrics,
      logger,
      onJudging: (judging) => this.podSelection.judging(judging),
    });
  }

  /** The CA and serving Secrets, as their watches list them: the certificates are looked at. */
  onCertificateSecrets(items: readonly V1Secret[]): void {
    this.certificates?.secrets.replace(items);
    this.queue?.add(CERTIFICATES_KEY);
  }

  /** The webhook configuration whose caBundle the keeper keeps. */
  onWebhookConfigurations(items: readonly V1MutatingWebhookConfiguration[]): void {
    this.certificates?.webhookConfigurations.replace(items);
    this.queue?.add(CERTIFICATES_KEY);
  }

  /** The configuration's ConfigMap. */
  get configMapRef(): ObjectRef {
    return this.options.configMap;
  }

  get systemNamespace(): string {
    return this.options.systemNamespace;
  }

  get certificateFlags(): CertificateFlags | undefined {
    return this.options.certificates;
  }

  /** False once the work queue stopped on a defect: /healthz fails. */
  get live(): boolean {
    return !this.broken;
  }

  get leading(): boolean {
    return this.queue !== undefined;
  }

  /** The revision history ConfigMap, beside the configuration's. */
  get historyRef(): ObjectRef {
    const { namespace, name } = this.options.configMap;
    return { namespace, name: historyConfigMapName(name) };
  }

  onHistory(items: readonly V1ConfigMap[]): void {
    this.history = items.find((c) => c.metadata?.name === this.historyRef.name);
    this.queue?.add(HISTORY_KEY);
    this.policiesChanged();
  }

  onNamespaces(delta: WatchDelta<V1Namespace>): void {
    const { changed, deleted } = this.namespaces.apply(delta);
    const names = changed.map((ns) => ns.metadata?.name ?? '');
    for (const name of names) this.queue?.add(namespaceKey(name));
    // A namespace's opt-in decides the scope of every owner in it.
    this.owners.namespacesChanged([...names, ...deleted]);
    if (changed.length > 0 || deleted.length > 0) this.waveChanged();
  }

  onWorkloads(kind: StampedKind, delta: WatchDelta<Workload>): void {
    if (this.owners.workloadsChanged(kind, delta)) this.ownersChanged();
  }

  /**
   * Pods that changed; or, with `all`, the first list of a watch with a new selector, which
   * replaces the set (pods the old selector chose and the new one does not are gone from it).
   */
  onPods(set: PodSet, delta: WatchDelta<V1Pod>, all?: Iterable<V1Pod>): void {
    if (all) this.owners.podsReplaced(set, all);
    else this.owners.podsChanged(set, delta);
    if (all) this.waveChanged();
    else if (delta.changed.length > 0 || delta.deleted.length > 0) this.ownersChanged();
  }

  onConfigMap(items: readonly V1ConfigMap[]): void {
    const cm = items.find((c) => c.metadata?.name === this.options.configMap.name);
    const { configChanged, waveInputsChanged, problem } = this.config.offer(cm);
    if (problem) this.problems.report(cm, problem, this.config.inForce?.revision);
    const inForce = this.config.inForce;
    if (configChanged && inForce) this.configInForce(inForce);
    // The ConfigMap's annotations hold the wave's stop and the admin's resume; the stage the
    // controller recorded itself is no news to the wave.
    if (waveInputsChanged) this.waveChanged();
  }

  private configInForce(inForce: ConfigInForce): void {
    this.options.metrics.setRevision(inForce.revision);
    this.options.logger.info('configuration in force', { revision: inForce.revision });
    this.podSelection.configInForce(inForce);
    this.queue?.add(HISTORY_KEY);
    this.policiesChanged();
    // excludeNamespaces may have changed: every namespace's label is decided again.
    for (const name of this.namespaces.keys()) this.queue?.add(namespaceKey(name));
  }

  startLeading(): void {
    if (this.queue) return;
    const { logger, metrics } = this.options;
    const queue: WorkQueue = new WorkQueue({
      reconcile: (key: string): Promise<Result> => this.reconcile(key, queue),
      logger,
      onReconcile: (event) => metrics.observeReconcile(event, logger),
      onDepth: (depth) => metrics.queueDepth.set(depth),
      onRunning: (running) => metrics.reconcilesRunning.set(running),
      // A leader whose queue stopped would hold the Lease and do nothing: fail /healthz, so the
      // kubelet restarts it and another replica leads.
      onBroken: () => (this.broken = true),
    });
    this.queue = queue;
    metrics.leader.set(1);
    queue.start();
    for (const name of this.namespaces.keys()) queue.add(namespaceKey(name));
    queue.add(WAVE_KEY);
    queue.add(HISTORY_KEY);
    if (this.certificates) queue.add(CERTIFICATES_KEY);
    if (this.policies) queue.add(POLICIES_KEY);
    logger.info('leading: reconciling every namespace and the wave', {
      namespaces: this.namespaces.size,
    });
  }

  /** Drops the queue; resolves once the reconciles in flight have ended. */
  async stopLeading(): Promise<void> {
    const queue = this.queue;
    this.queue = undefined;
    this.options.metrics.leader.set(0);
    await queue?.stop();
    this.options.metrics.queueDepth.set(0);
    this.options.metrics.reconcilesRunning.set(0);
    this.options.metrics.forgetWave();
  }

  /** Owners changed: the wave looks only when one it reads did (OwnerIndex.assessMarked). */
  private ownersChanged(): void {
    this.policiesChanged();
    const config = this.config.inForce;
    // A follower, or no configuration yet: the next wave step assesses what is marked.
    if (!config || !this.queue) return this.waveChanged();
    const wave = readWave(this.config.configMap?.metadata?.annotations);
    const started = performance.now();
    const mustPlan = this.owners.assessMarked(
      config,
      this.clock(),
      waveComplete(wave, config.revision),
    );
    this.options.logger.debug('owners assessed', {
      durationMs: Math.round((performance.now() - started) * 1000) / 1000,
      waveStep: mustPlan,
    });
    // The sets' waves are assessed whole each step (OwnerIndex.assessSet): any owner's change
    // may be one of theirs.
    if (mustPlan || config.config.sets.length > 0) this.waveChanged();
    else this.options.metrics.setOwnerStates(this.owners.states);
  }

  private waveChanged(): void {
    this.queue?.addAfter(WAVE_KEY, WAVE_BATCH_MS);
  }

  private async acquireWrite(queue: WorkQueue | undefined): Promise<void> {
    await this.limiter.acquire();
    // Leadership may have ended while this waited for a token: only the leader writes.
    if (queue === undefined || this.queue !== queue || !(this.options.mayWrite?.() ?? true))
      throw new TerminalError('no longer the leader; not writing');
  }

  /** The reconciler of each kind of key (a key's part before its first slash). */
  private readonly reconcilers = new Map<
    string,
    (key: string, queue: WorkQueue) => Promise<Result>
  >([
    [WAVE_KEY, (_key, queue) => this.reconcileWave(queue)],
    [HISTORY_KEY, (_key, queue) => this.reconcileHistory(queue)],
    [NAMESPACE_KEY_KIND, (key, queue) => this.reconcileNamespace(key, queue)],
  ]);

  private async reconcile(key: string, queue: WorkQueue): Promise<Result> {
    const reconciler = this.reconcilers.get(kindOfKey(key));
    if (!reconciler) throw new TerminalError(`no reconciler for key ${key}`);
    return reconciler(key, queue);
  }

  private reconcileHistory(queue: WorkQueue): Promise<Result> {
    return reconcileHistory({
      api: this.options.api,
      ref: this.historyRef,
      config: this.config.inForce,
      configAnnotations: this.config.configMap?.metadata?.annotations,
      history: this.history,
      inUse: this.owners.pinnedRevisions(),
      setsInUse: this.owners.pinnedSetRevisions(),
      clock: this.clock,
      acquireWrite: () => this.acquireWrite(queue),
      metrics: this.options.metrics,
      logger: this.options.logger,
    });
  }

  private reconcileNamespace(key: string, queue: WorkQueue): Promise<Result> {
    const name = namespaceOfKey(key);
    if (name === undefined) throw new TerminalError(`no reconciler for key ${key}`);
    return reconcileNamespace(name, {
      api: this.options.api,
      get: (n) => this.namespaces.get(n),
      policy: {
        systemNamespace: this.options.systemNamespace,
        excluded: this.config.inForce?.config.excludeNamespaces,
      },
      acquireWrite: () => this.acquireWrite(queue),
      onWrite: reportLabelWrite(this.options.metrics, this.options.logger),
    });
  }

  private reconcileWave(queue: WorkQueue): Promise<Result> {
    const config = this.config.inForce;
    // Nothing to roll to yet; the ConfigMap's watch adds the key when one is in force.
    if (!config) return Promise.resolve({ done: true });
    return this.wave.step(config, () => this.acquireWrite(queue));
  }
}
