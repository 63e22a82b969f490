// A list-watch that does not die silently and keeps only what its reader needs. The client
// library's ListWatch stops for good on any error but 410 (kubernetes-client/javascript #596,
// #958) and caches every object whole; this one streams each list as the first events of its
// watch where the API server offers it (WatchList, on by default in Kubernetes 1.32 and from
// 1.34: served from the server's cache, one object in memory at a time) and lists in pages of
// plain JSON (api-client.ts) where it does not, passes each object through the reader's
// transform before it is kept, watches from the list's resourceVersion (with bookmarks, so a
// quiet watch resumes where it was), hands its reader the changes of each burst of events (never
// the whole list again), restarts with capped, jittered back-off after an error, re-lists
// periodically so a watch gone quiet without an error is replaced too, and counts restarts.

import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { KubeApi } from './api-client';
import { backoffDelay } from './backoff';
import { httpStatus } from './errors';
import type { KubeLogger } from './log';
import {
  StreamedList,
  STREAMED_LIST_QUERY,
  refusalOfStreamedLists,
  type Listed,
} from './streamed-list';

export type RestartReason = 'error' | 'resync';

/** What a watch's store needs of an object it keeps: its key and version. */
export interface Keyed {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** What changed in one burst of watch events, or between two lists. */
export interface WatchDelta<T> {
  /** Objects added or changed, as the store now holds them. */
  changed: readonly T[];
  /** Objects gone, as the store last held them. */
  deleted: readonly T[];
}

export interface WatchOptions<T extends Keyed> {
  api: KubeApi;
  /** The watch path, such as /api/v1/namespaces. */
  path: string;
  fieldSelector?: string;
  labelSelector?: string;
  /**
   * What the store keeps of each object: the reader's fields only, so that a watch of thousands
   * of objects holds kilobytes of each, not the whole object with its managedFields. It must
   * keep metadata.name, namespace and resourceVersion. Identity by default.
   */
  transform?: (object: KubernetesObject) => T;
  /** Called with every object after each (re)list and each burst of changes (small watches). */
  onChange?: (objects: readonly T[]) => void;
  /** Called with what changed after each (re)list and each burst of changes. */
  onDelta?: (delta: WatchDelta<T>) => void;
  /** Each event received: an object added, changed or deleted. */
  onEvent?: () => void;
  /** Each restart: `error` after a failure (back-off), `resync` for a re-list that is no failure. */
  onRestart: (reason: RestartReason) => void;
  logger: KubeLogger;
  /** Name for logs and metrics. */
  resource: string;
  /** Re-list at least this often even when the watch looks healthy. */
  resyncMs?: number;
  /** Objects per page of a list (default 500), which bounds what one response holds. */
  pageSize?: number;
}

/** A failed watch is tried again after 0.5 s, doubling, each ±25 %, at most 30 s (18 to 30 s). */
const BACKOFF = { baseMs: 500, capMs: 30_000, jitter: 0.25, random: Math.random };
const HEALTHY_AFTER_MS = 30_000;
const PAGE_SIZE = 500;

export const storeKey = (o: { metadata?: { name?: string; namespace?: string } }): string => {
  const meta = o.metadata ?? {};
  return meta.namespace ? `${meta.namespace}/${meta.name ?? ''}` : (meta.name ?? '');
};

/**
 * The clients whose API server does not stream lists: every watch on one lists in pages from then
 * on (a watch made later too, such as the controller's pod watch when its selector changes).
 */
const refusedStreams = new WeakSet<KubeApi>();

export class ResilientWatch<T extends Keyed> {
  private store = new Map<string, T>();
  /** Bumped by every (re)start: callbacks of an older list or watch are ignored. */
  private generation = 0;
  /** Ends the watch under way, if any. */
  private end: (() => void) | undefined;
  private resourceVersion = '';
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private synced = false;
  private readonly firstSync: Promise<void>;
  private resolveFirstSync: () => void = () => undefined;
  private readonly changed = new Map<string, T>();
  private readonly deleted = new Map<string, T>();
  private flushScheduled = false;
  private readonly transform: (object: KubernetesObject) => T;
  /** How the next list is read (see streamEnded). */
  private nextList: 'stream' | 'pages' | 'never-stream' = 'stream';

  constructor(private readonly options: WatchOptions<T>) {
    this.firstSync = new Promise((resolve) => (this.resolveFirstSync = resolve));
    this.transform = options.transform ?? ((object) => object as T);
  }

  /** Starts watching; resolves once a list is in and the watch after it is open. */
  async start(): Promise<void> {
    this.begin();
    if (this.options.resyncMs)
      this.resyncTimer = setInterval(
        () => this.restart('resync', 'periodic re-list'),
        this.options.resyncMs,
      ).unref();
    await this.firstSync;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  /** The objects as last listed and watched, transformed: read them, never change them. */
  get objects(): ReadonlyMap<string, T> {
    return this.store;
  }

  private begin(): void {
    if (this.stopped) return;
    const generation = ++this.generation;
    const streams = this.nextList === 'stream' && !refusedStreams.has(this.options.api);
    if (this.nextList === 'pages') this.nextList = 'stream';
    if (streams) {
      this.watchFrom(generation, new StreamedList(this.transform, storeKey));
      return;
    }
    const started = performance.now();
    this.list().then(
      (listed) => {
        if (generation === this.generation && this.take(listed, started, 'pages'))
          this.watchFrom(generation);
      },
      (err: unknown) => {
        if (generation === this.generation) this.restart('error', `list failed: ${describe(err)}`);
      },
    );
  }

  /** A whole list in: it replaces the store. False when the reader failed on it (restarted). */
  private take(listed: Listed<T>, started: number, how: 'pages' | 'stream'): boolean {
    this.options.logger.log('debug', 'listed', {
      resource: this.options.resource,
      objects: listed.items.length,
      how,
      durationMs: Math.round(performance.now() - started),
    });
    try {
      this.replace(listed);
    } catch (err) {
      this.restart('error', `the reader failed on the list: ${describe(err)}`);
      return false;
    }
    const generation = this.generation;
    // A watch that stays up this long without an error counts as healthy too.
    setTimeout(() => {
      if (generation === this.generation) this.failures = 0;
    }, HEALTHY_AFTER_MS).unref();
    return true;
  }

  private async list(): Promise<Listed<T>> {
    const { api, path, labelSelector, fieldSelector, pageSize } = this.options;
    const items: T[] = [];
    let resourceVersion = '';
    let token: string | undefined;
    do {
      const page = await api.get<KubernetesListObject<KubernetesObject>>(path, {
        limit: pageSize ?? PAGE_SIZE,
        continue: token,
        labelSelector,
        fieldSelector,
      });
      for (const item of page.items ?? []) items.push(this.transform(item));
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      // Raw JSON names it `continue`; the typed client's V1ListMeta calls it `_continue`.
      token = (page.metadata as { continue?: string } | undefined)?.continue || undefined;
    } while (token);
    return { items, resourceVersion };
  }

  /**
   * A new list in place of the store: what differs from the last one is one delta. An object
   * listed at the version the store holds keeps the store's copy: readers were handed that one
   * (the controller's owner index keeps them), and a fresh copy would hold it twice.
   */
  private replace(listed: Listed<T>): void {
    const before = this.store;
    const next = new Map<string, T>();
    for (const item of listed.items) {
      const key = storeKey(item);
      const held = before.get(key);
      const same =
        held !== undefined && held.metadata?.resourceVersion === item.metadata?.resourceVersion;
      const kept = same ? held : item;
      next.set(key, kept);
      if (!same) this.changed.set(key, kept);
      this.deleted.delete(key);
    }
    for (const [key, old] of before)
      if (!next.has(key)) {
        this.changed.delete(key);
        this.deleted.set(key, old);
      }
    this.store = next;
    this.resourceVersion = listed.resourceVersion;
    this.flush();
  }

  /**
   * Watches from the last list's resourceVersion; or, with `initial`, streams the list itself as
   * the watch's first events and goes on watching once the last of them has come.
   */
  private watchFrom(generation: number, initial?: StreamedList<T>): void {
    const { api, path, labelSelector, fieldSelector } = this.options;
    let expired = false;
    let events = 0;
    const startedAt = Date.now();
    const selectors = { allowWatchBookmarks: true, labelSelector, fieldSelector };
    const query = initial
      ? { ...selectors, ...STREAMED_LIST_QUERY }
      : { ...selectors, resourceVersion: this.resourceVersion };
    // Synced once listed and watching: from here on, nothing that happens is missed.
    const synced = (): void => {
      this.synced = true;
      this.resolveFirstSync();
    };
    const onEvent = (type: string, raw: Record<string, unknown>): void => {
      const object = raw as KubernetesObject & { code?: number };
      if (generation !== this.generation) return;
      if (type === 'ERROR') {
        if (object.code === 410) expired = true;
        return;
      }
      events += 1;
      if (!initial) return this.apply(type, object);
      const listed = initial.add(type, object);
      if (!listed) return;
      const { started } = initial;
      initial = undefined;
      if (this.take(listed, started, 'stream')) synced();
    };
    const onDone = (err: unknown): void => {
      if (generation !== this.generation || this.stopped) return;
      if (initial) return this.streamEnded(err, expired);
      const quick = Date.now() - startedAt < 1000 && events === 0;
      const next = afterWatch(err, expired, quick);
      if (next === 'resume') this.watchFrom(generation);
      else if (next === 'expired') this.restart('resync', 'the watch expired (410 Gone)');
      else this.restart('error', err ? describe(err) : 'the watch ended at once');
    };
    const onOpen = (): void => {
      if (generation === this.generation && !initial) synced();
    };
    this.end = api.watch(path, query, { open: onOpen, event: onEvent, done: onDone });
  }

  /** One event of a watch that has its list. */
  private apply(type: string, object: KubernetesObject): void {
    // Events show the watch itself works: only now is the back-off reset.
    this.failures = 0;
    this.resourceVersion = object.metadata?.resourceVersion ?? this.resourceVersion;
    if (type === 'BOOKMARK') return;
    this.options.onEvent?.();
    if (type === 'ADDED' || type === 'MODIFIED') this.upsert(object);
    else if (type === 'DELETED') this.remove(object);
  }

  /**
   * A streamed list that ended before its last initial event. Refused by the server (see
   * refusalOfStreamedLists): every watch on this client lists in pages from then on; refused for
   * this watch (400): this one does. Anything else is a failure, tried again with back-off: in
   * pages the next time, so a server that cuts such streams (a slow reader of a busy collection,
   * a proxy) cannot keep the watch from ever syncing, and streamed after that.
   */
  private streamEnded(err: unknown, expired: boolean): void {
    const refusal = refusalOfStreamedLists(err);
    if (refusal) {
      if (refusal === 'server') refusedStreams.add(this.options.api);
      else this.nextList = 'never-stream';
      this.options.logger.log(
        'info',
        'the API server does not stream this list; listing in pages',
        {
          resource: this.options.resource,
          reason: describe(err),
        },
      );
      this.begin();
      return;
    }
    if (expired || httpStatus(err) === 410)
      return this.restart('resync', 'the watch expired (410 Gone)');
    this.nextList = 'pages';
    const why = err ? describe(err) : 'the API server ended it';
    this.restart('error', `the streamed list did not finish: ${why}`);
  }

  private upsert(object: KubernetesObject): void {
    const kept = this.transform(object);
    const key = storeKey(kept);
    this.store.set(key, kept);
    this.deleted.delete(key);
    this.changed.set(key, kept);
    this.scheduleFlush();
  }

  private remove(object: KubernetesObject): void {
    const key = storeKey(object);
    const old = this.store.get(key) ?? this.transform(object);
    this.store.delete(key);
    this.changed.delete(key);
    this.deleted.set(key, old);
    this.scheduleFlush();
  }

  /** One delta per burst of events, never one per object. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      try {
        this.flush();
      } catch (err) {
        this.restart('error', `the reader failed on a change: ${describe(err)}`);
      }
    });
  }

  private flush(): void {
    if (this.stopped) return;
    const delta = { changed: [...this.changed.values()], deleted: [...this.deleted.values()] };
    this.changed.clear();
    this.deleted.clear();
    this.options.onDelta?.(delta);
    this.options.onChange?.([...this.store.values()]);
  }

  private restart(reason: RestartReason, why: string): void {
    if (this.stopped) return;
    this.generation += 1;
    this.end?.();
    this.end = undefined;
    clearTimeout(this.timer);
    if (reason === 'error') this.failures++;
    const delay = reason === 'resync' ? 0 : backoffDelay({ ...BACKOFF, failures: this.failures });
    this.options.onRestart(reason);
    this.options.logger.log(reason === 'resync' ? 'debug' : 'warn', 'watch restarting', {
      resource: this.options.resource,
      reason: why,
      delayMs: Math.round(delay),
    });
    this.timer = setTimeout(() => this.begin(), delay).unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.generation += 1;
    clearTimeout(this.timer);
    clearInterval(this.resyncTimer);
    this.end?.();
    this.end = undefined;
    await Promise.resolve();
  }
}

/**
 * What follows the end of a watch. The API server ends every watch after a while, and a quiet one
 * times out on our side: both resume from the last resourceVersion. 410 Gone means that version
 * is older than the API server keeps: list again. Any other error, or a watch that ended at once
 * without an event, is a failure.
 */
function afterWatch(
  err: unknown,
  expired: boolean,
  quick: boolean,
): 'resume' | 'expired' | 'error' {
  const status = httpStatus(err);
  if (expired || status === 410) return 'expired';
  const timedOut = (err as { name?: string } | null)?.name === 'TimeoutError';
  return (err === null || err === undefined || timedOut) && !quick ? 'resume' : 'error';
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === 'string') return err;
  return JSON.stringify(err) ?? 'unknown error';
}
