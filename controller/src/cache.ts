// A read-only view of one kind of object, replaced whole from a watch's list: it keys objects by
// namespace/name and says which keys changed (by resourceVersion) or went away, so handlers can
// enqueue keys, never events. The objects are the informer's own: nothing here changes them.

import type { KubernetesObject } from '@kubernetes/client-node';

export const objectKey = (o: { metadata?: { name?: string; namespace?: string } }): string => {
  const meta = o.metadata ?? {};
  return meta.namespace ? `${meta.namespace}/${meta.name ?? ''}` : (meta.name ?? '');
};

export interface CacheDiff<T> {
  changed: T[];
  deleted: string[];
}

export class ObjectCache<T extends KubernetesObject> {
  private objects: ReadonlyMap<string, T> = new Map();
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

  /** Takes the watch's whole current list and returns what differs from the last one. */
  replace(items: readonly T[]): CacheDiff<T> {
    const before = this.objects;
    const next = new Map<string, T>();
    const changed: T[] = [];
    for (const item of items) {
      const key = objectKey(item);
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
