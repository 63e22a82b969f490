// API access: the kubeconfig, and a list-watch that does not die silently. The client's
// ListWatch stops for good on any error but 410 (kubernetes-client/javascript #596, #958):
// this wrapper restarts it with capped, jittered back-off, re-lists periodically so a watch
// that went quiet without an error is replaced too, and counts every restart.

import {
  KubeConfig,
  ListWatch,
  Watch,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { KubeLogger } from './log';

export function loadKubeConfig(path: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (path) kc.loadFromFile(path);
  else kc.loadFromCluster();
  return kc;
}

export type RestartReason = 'error' | 'resync';

export interface WatchOptions<T extends KubernetesObject> {
  kc: KubeConfig;
  /** The watch path, such as /api/v1/namespaces. */
  path: string;
  list: () => Promise<KubernetesListObject<T>>;
  fieldSelector?: string;
  labelSelector?: string;
  /** Called with every object after each (re)list and each burst of changes. The objects are the
   * cache's own: read them, never change them. */
  onChange: (objects: readonly T[]) => void;
  /** Each restart: `error` after a failure (back-off), `resync` for the periodic re-list. */
  onRestart: (reason: RestartReason) => void;
  logger: KubeLogger;
  /** Name for logs and metrics. */
  resource: string;
  /** Re-list at least this often even when the watch looks healthy. */
  resyncMs?: number;
}

const BASE_DELAY_MS = 500;
const MAX_DELAY_MS = 30_000;
const HEALTHY_AFTER_MS = 30_000;

export class ResilientWatch<T extends KubernetesObject> {
  private informer: ListWatch<T> | undefined;
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private synced = false;
  private readonly firstSync: Promise<void>;
  private resolveFirstSync: () => void = () => undefined;

  constructor(private readonly o: WatchOptions<T>) {
    this.firstSync = new Promise((resolve) => (this.resolveFirstSync = resolve));
  }

  /** Starts watching; resolves after the first successful list. */
  async start(): Promise<void> {
    this.begin();
    if (this.o.resyncMs)
      this.resyncTimer = setInterval(() => this.restart('resync'), this.o.resyncMs).unref();
    await this.firstSync;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  private begin(): void {
    if (this.stopped) return;
    const informer = new ListWatch<T>(
      this.o.path,
      new Watch(this.o.kc),
      this.o.list,
      false,
      this.o.labelSelector,
      this.o.fieldSelector,
    );
    this.informer = informer;
    let listed = false;
    let scheduled = false;
    const publish = (): void => {
      scheduled = false;
      if (this.informer !== informer) return;
      this.synced = true;
      this.resolveFirstSync();
      this.o.onChange(informer.list());
    };
    // A list fires one event per object: publish once the list is in, then once per burst of
    // events, never once per object (that is quadratic in the number of objects).
    const onEvent = (): void => {
      if (!listed || scheduled) return;
      scheduled = true;
      // Events after the list show the watch itself works: only now is the back-off reset.
      this.failures = 0;
      setImmediate(publish);
    };
    for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, onEvent);
    informer.on('error', (err: unknown) => {
      if (this.informer === informer) this.restart(`error: ${describe(err)}`);
    });
    informer.start().then(
      () => {
        listed = true;
        publish();
        // A watch that stays up this long without an error counts as healthy too.
        setTimeout(() => {
          if (this.informer === informer) this.failures = 0;
        }, HEALTHY_AFTER_MS).unref();
      },
      (err: unknown) => this.restart(`start failed: ${describe(err)}`),
    );
  }

  private restart(why: string): void {
    if (this.stopped) return;
    const old = this.informer;
    this.informer = undefined;
    void old?.stop().catch(() => undefined);
    clearTimeout(this.timer);
    const delay =
      why === 'resync'
        ? 0
        : Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** this.failures) * (0.5 + Math.random() / 2);
    if (why !== 'resync') this.failures++;
    this.o.onRestart(why === 'resync' ? 'resync' : 'error');
    this.o.logger.log(why === 'resync' ? 'debug' : 'warn', 'watch restarting', {
      resource: this.o.resource,
      reason: why,
      delayMs: Math.round(delay),
    });
    this.timer = setTimeout(() => this.begin(), delay).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    clearInterval(this.resyncTimer);
    await this.informer?.stop().catch(() => undefined);
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return JSON.stringify(err) ?? 'unknown error';
}
