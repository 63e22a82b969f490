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

/**
 * A bookmark without the end annotation before the end: the server ignored the query and
 * watches the old way (it marks the first bookmark it sends when it streams a list), so no end
 * will come.
 */
export class StreamsNotSupportedError extends Error {
  constructor() {
    super('a bookmark came before the end of the initial events: the server does not stream lists');
    this.name = 'StreamsNotSupportedError';
  }
}

export class StreamedList<T> {
  private readonly items = new Map<string, T>();
  readonly started = performance.now();

  constructor(
    private readonly transform: (object: KubernetesObject) => T,
    private readonly key: (object: KubernetesObject | T) => string,
  ) {}

  /**
   * Takes one event of the stream; returns the whole list once the last initial event came, and
   * throws StreamsNotSupportedError at a bookmark that does not end them.
   */
  add(type: string, object: KubernetesObject): Listed<T> | undefined {
    if (type === 'BOOKMARK') {
      if (object.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true')
        throw new StreamsNotSupportedError();
      const resourceVersion = object.metadata.resourceVersion ?? '';
      return { items: [...this.items.values()], resourceVersion };
    }
    if (type === 'ADDED' || type === 'MODIFIED') {
      const kept = this.transform(object);
      this.items.set(this.key(kept), kept);
    } else if (type === 'DELETED') this.items.delete(this.key(object));
    return undefined;
  }
}

/**
 * Whether the answer to a streamed list refuses streaming: `server` for every watch on it (one
 * with the WatchList feature off, the default in 1.33, refuses `sendInitialEvents`, and one older
 * than 1.27 refuses `resourceVersionMatch` on a watch, both as invalid: 422), `watch` for this
 * one (a 400: an endpoint that does not stream, or this watch's own selector). A server that
 * ignores the query shows it by a bookmark without the end annotation (StreamsNotSupportedError).
 */
export function refusalOfStreamedLists(err: unknown): 'server' | 'watch' | undefined {
  if (err instanceof StreamsNotSupportedError) return 'server';
  const status = httpStatus(err);
  if (status === 422) return 'server';
  return status === 400 ? 'watch' : undefined;
}
