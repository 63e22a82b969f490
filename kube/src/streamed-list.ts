// A list streamed as the first events of a watch (the WatchList feature: `sendInitialEvents`),
// which the API server serves from its cache one object at a time instead of in pages: every
// object as ADDED, then a bookmark, annotated as the end of them, that carries the list's
// resourceVersion. The objects are kept aside until that bookmark, so a stream cut short hands
// its reader nothing half-listed.

import type { KubernetesObject } from '@kubernetes/client-node';
import { httpStatus } from './errors';

/** A whole list, its objects transformed already. */
export interface Listed<T> {
  items: T[];
  resourceVersion: string;
}

/** The query that asks a watch for its list first; no resourceVersion makes it a consistent read. */
export const STREAMED_LIST_QUERY = {
  sendInitialEvents: true,
  resourceVersionMatch: 'NotOlderThan',
};

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export class StreamedList<T> {
  private readonly items = new Map<string, T>();
  readonly started = performance.now();

  constructor(
    private readonly transform: (object: KubernetesObject) => T,
    private readonly key: (object: KubernetesObject | T) => string,
  ) {}

  /** Takes one event of the stream; returns the whole list once the last initial event came. */
  add(type: string, object: KubernetesObject): Listed<T> | undefined {
    if (type === 'BOOKMARK')
      return object.metadata?.annotations?.[INITIAL_EVENTS_END] === 'true'
        ? {
            items: [...this.items.values()],
            resourceVersion: object.metadata.resourceVersion ?? '',
          }
        : undefined;
    if (type === 'ADDED' || type === 'MODIFIED') {
      const kept = this.transform(object);
      this.items.set(this.key(kept), kept);
    } else if (type === 'DELETED') this.items.delete(this.key(object));
    return undefined;
  }
}

/**
 * Whether the answer to a streamed list says the API server does not stream lists: one with the
 * WatchList feature off (the default in 1.33) refuses `sendInitialEvents`, and one older than
 * 1.27 refuses `resourceVersionMatch` on a watch, both as invalid (422).
 */
export function refusesStreamedLists(err: unknown): boolean {
  const status = httpStatus(err);
  return status === 422 || status === 400;
}
