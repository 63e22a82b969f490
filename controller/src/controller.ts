// The controller's shell: a namespace cache fed by a watch, and a work queue that exists only
// while this replica leads. Followers keep the cache warm; a new leader enqueues every known
// namespace, as whatever happened while it did not lead must be looked at again.

import { CoreV1Api, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import {
  namespaceKey,
  namespaceOfKey,
  reconcileNamespace,
  type NamespacePolicy,
} from './namespace';
import { TerminalError, WorkQueue, WriteLimiter, type ReconcileEvent, type Result } from './queue';

/** The global write limit: a first start over thousands of namespaces must not flood the API. */
export const WRITE_LIMIT = { ratePerSecond: 20, burst: 50 };

export interface ControllerOptions {
  kc: KubeConfig;
  policy: NamespacePolicy;
  logger: Logger;
  metrics: ControllerMetrics;
}

const kindOfKey = (key: string): string => key.split('/')[0] ?? 'unknown';

export class Controller {
  private namespaces: ReadonlyMap<string, V1Namespace> = new Map();
  private queue: WorkQueue | undefined;
  private readonly core: CoreV1Api;
  private readonly limiter = new WriteLimiter(WRITE_LIMIT);

  constructor(private readonly o: ControllerOptions) {
    this.core = o.kc.makeApiClient(CoreV1Api);
    o.metrics.leader.set(0);
  }

  get leading(): boolean {
    return this.queue !== undefined;
  }

  /** A new view of every namespace: keeps it, and enqueues those that changed. */
  onNamespaces(items: readonly V1Namespace[]): void {
    const before = this.namespaces;
    const next = new Map<string, V1Namespace>();
    const changed: string[] = [];
    for (const ns of items) {
      const name = ns.metadata?.name;
      if (!name) continue;
      next.set(name, ns);
      if (before.get(name)?.metadata?.resourceVersion !== ns.metadata?.resourceVersion)
        changed.push(name);
    }
    // The new view first: add() may start a reconcile at once, and it must read this view.
    this.namespaces = next;
    for (const name of changed) this.queue?.add(namespaceKey(name));
  }

  startLeading(): void {
    if (this.queue) return;
    const { logger, metrics } = this.o;
    const queue: WorkQueue = new WorkQueue({
      reconcile: (key: string): Promise<Result> => this.reconcile(key, queue),
      logger,
      onReconcile: (event) => this.observe(event),
      onDepth: (depth) => metrics.queueDepth.set(depth),
    });
    this.queue = queue;
    metrics.leader.set(1);
    queue.start();
    for (const name of this.namespaces.keys()) queue.add(namespaceKey(name));
    logger.info('leading: reconciling every namespace', { namespaces: this.namespaces.size });
  }

  /** Drops the queue; resolves once the reconciles in flight have ended. */
  async stopLeading(): Promise<void> {
    const queue = this.queue;
    this.queue = undefined;
    this.o.metrics.leader.set(0);
    await queue?.stop();
    this.o.metrics.queueDepth.set(0);
  }

  private async reconcile(key: string, queue: WorkQueue): Promise<Result> {
    const name = namespaceOfKey(key);
    if (name === undefined) throw new TerminalError(`no reconciler for key ${key}`);
    return reconcileNamespace(name, {
      core: this.core,
      get: (n) => this.namespaces.get(n),
      policy: this.o.policy,
      acquireWrite: async () => {
        await this.limiter.acquire();
        // Leadership may have ended while this waited for a token: only the leader writes.
        if (this.queue !== queue) throw new TerminalError('no longer the leader; not writing');
      },
      onWrite: (n, patch) => {
        this.o.metrics.writes.inc({ resource: 'namespaces', verb: 'patch' });
        this.o.logger.info('mirroring the opt-in to the namespace label', {
          namespace: n,
          labels: patch.metadata.labels,
        });
      },
    });
  }

  private observe(event: ReconcileEvent): void {
    const labels = { kind: kindOfKey(event.key), outcome: event.outcome };
    this.o.metrics.reconciles.inc(labels);
    this.o.metrics.duration.observe(labels, event.durationMs / 1000);
  }
}
