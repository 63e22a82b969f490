// A read-only view of one kind of object, kept from a watch's deltas (or replaced whole, for the
// watches of a named object or two): it keys objects by namespace/name and says which keys
// changed (by resourceVersion) or went away, so handlers can enqueue keys, never events. The
// objects are the watch's own: nothing here changes them.

import type { KubernetesObject } from '@kubernetes/client-node';
import { storeKey, type WatchDelta } from '@outrigger/kube';

export interface CacheDiff<T> {
  changed: T[];
  deleted: string[];
}

export class ObjectCache<T extends KubernetesObject> {
  private objects: Map<string, T> = new Map();
  private synced = false;

  get hasSynced(): boolean {
    return this.synced;
  }

  get size(): number {
    return this.objects.size;
  }

  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  values(): IterableIterator<T> {
    return this.objects.values();
  }

  keys(): IterableIterator<string> {
    return this.objects.keys();
  }

  /** Takes a watch's delta and returns what really changed: the same version again is no change. */
  apply(delta: WatchDelta<T>): CacheDiff<T> {
    const objects = this.objects;
    const changed: T[] = [];
    const deleted: string[] = [];
    for (const item of delta.deleted) {
      const key = storeKey(item);
      if (objects.delete(key)) deleted.push(key);
    }
    for (const item of delta.changed) {
      const key = storeKey(item);
      if (objects.get(key)?.metadata?.resourceVersion !== item.metadata?.resourceVersion)
        changed.push(item);
      objects.set(key, item);
    }
    this.synced = true;
    return { changed, deleted };
  }

  /** Takes the watch's whole current list and returns what differs from the last one. */
  replace(items: readonly T[]): CacheDiff<T> {
    const before = this.objects;
    const next = new Map<string, T>();
    const changed: T[] = [];
    for (const item of items) {
      const key = storeKey(item);
      next.set(key, item);
      if (before.get(key)?.metadata?.resourceVersion !== item.metadata?.resourceVersion)
        changed.push(item);
    }
    const deleted = [...before.keys()].filter((k) => !next.has(k));
    this.objects = next;
    this.synced = true;
    return { changed, deleted };
  }
}
