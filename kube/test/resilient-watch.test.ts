// ResilientWatch against a fake clock (jest's fake timers drive its back-off, its re-lists and
// the turn of the event loop it batches events in) and a collection kept in memory that answers
// lists in pages and streams watch events the test pushes. The end-to-end suite
// (e2e/test/watch.test.ts) runs it through a proxy in front of a real API server; these tests
// take it through minutes of failures at once.

import {
  ApiError,
  ResilientWatch,
  type KubeApi,
  type Keyed,
  type RestartReason,
  type WatchDelta,
} from '../src';

interface Item extends Keyed {
  metadata: { name: string; resourceVersion: string };
  data?: string;
}

interface Stream {
  open: () => void;
  event: (type: string, object: Record<string, unknown>) => void;
  done: (err: Error | null) => void;
}

/** A collection on a fake API server: paged lists, and the watches open on it. */
class Collection {
  readonly items = new Map<string, Item>();
  version = 0;
  lists = 0;
  /** Watches asked to stream their list first (sendInitialEvents). */
  streamed = 0;
  /** While true, every list fails with a 503. */
  down = false;
  /**
   * Whether a watch may stream its list first (the WatchList feature): when false, such a watch
   * is refused as invalid, as an API server without the feature does.
   */
  streams = false;
  /** A server that ignores the query: every object as ADDED, then a bookmark with no annotation. */
  ignoresStreams = false;
  /** The status of the refusal when `streams` is false: 422 (Invalid) as kube-apiserver's. */
  refusal: 422 | 400 = 422;
  /** A streamed list is cut after this many of its initial events, once. */
  cutAfter: number | undefined;
  watches: Stream[] = [];

  put(name: string, data = ''): Item {
    const item = { metadata: { name, resourceVersion: String(++this.version) }, data };
    this.items.set(name, item);
    for (const w of this.watches) w.event('MODIFIED', item);
    return item;
  }

  remove(name: string): void {
    const item = this.items.get(name);
    this.items.delete(name);
    this.version += 1;
    if (item)
      for (const w of this.watches) w.event('DELETED', item as unknown as Record<string, unknown>);
  }

  /** Ends every open watch, as a dropped connection does. */
  drop(err: Error | null): void {
    const open = this.watches;
    this.watches = [];
    for (const w of open) w.done(err);
  }

  /** Every object as ADDED, then the bookmark that ends them; or, with cutAfter, a dropped stream. */
  private initialEvents(on: Stream): void {
    let sent = 0;
    for (const item of this.items.values()) {
      if (sent++ === this.cutAfter) {
        this.cutAfter = undefined;
        this.watches = this.watches.filter((w) => w !== on);
        return on.done(new Error('connection reset'));
      }
      on.event('ADDED', structuredClone(item) as unknown as Record<string, unknown>);
    }
    const annotations = this.ignoresStreams ? {} : { 'k8s.io/initial-events-end': 'true' };
    try {
      on.event('BOOKMARK', { metadata: { resourceVersion: String(this.version), annotations } });
    } catch (err) {
      // As api-client.ts does: the reader's throw ends the watch with it.
      this.watches = this.watches.filter((w) => w !== on);
      on.done(err as Error);
    }
  }

  api(): KubeApi {
    const api = {
      get: (_path: string, query: { limit?: number; continue?: string }) => {
        this.lists += 1;
        if (this.down) return Promise.reject(new ApiError(503, '{}', 'list'));
        const all = [...this.items.values()];
        const from = Number(query.continue ?? 0);
        const to = from + (query.limit ?? all.length);
        return Promise.resolve({
          items: structuredClone(all.slice(from, to)),
          metadata: {
            resourceVersion: String(this.version),
            continue: to < all.length ? String(to) : undefined,
          },
        });
      },
      watch: (_path: string, query: { sendInitialEvents?: boolean }, on: Stream) => {
        if (query.sendInitialEvents) {
          this.streamed += 1;
          const refusal = this.down
            ? new ApiError(503, '{}', 'watch')
            : !this.streams && !this.ignoresStreams
              ? new ApiError(this.refusal, '{"message":"sendInitialEvents is forbidden"}', 'watch')
              : undefined;
          if (refusal) {
            queueMicrotask(() => on.done(refusal));
            return () => undefined;
          }
        }
        this.watches.push(on);
        queueMicrotask(() => {
          on.open();
          if (query.sendInitialEvents) this.initialEvents(on);
        });
        return () => (this.watches = this.watches.filter((w) => w !== on));
      },
    };
    return api as unknown as KubeApi;
  }
}

function watchOf(c: Collection, o: { resyncMs?: number; api?: KubeApi } = {}) {
  const deltas: WatchDelta<{ name: string; data?: string }>[] = [];
  const restarts: RestartReason[] = [];
  const watch = new ResilientWatch<{ metadata: Item['metadata']; name: string; data?: string }>({
    api: o.api ?? c.api(),
    path: '/api/v1/configmaps',
    resource: 'configmaps',
    pageSize: 2,
    // Keeps the name and data, and the metadata the store needs.
    transform: (o) => {
      const item = o as unknown as Item;
      return { metadata: item.metadata, name: item.metadata.name, data: item.data };
    },
    onDelta: (d) =>
      deltas.push({
        changed: d.changed.map(({ name, data }) => ({ name, data })),
        deleted: d.deleted.map(({ name }) => ({ name })),
      }),
    onRestart: (r) => restarts.push(r),
    logger: { log: () => undefined },
    resyncMs: o.resyncMs,
  });
  return { watch, deltas, restarts };
}

async function advance(ms: number, step = 50): Promise<void> {
  for (let t = 0; t < ms; t += step) await jest.advanceTimersByTimeAsync(step);
}

/** Starts a watch and lets its first list and watch come in. */
async function startAndSync(watch: { start: () => Promise<void> }): Promise<void> {
  const started = watch.start();
  await advance(100);
  await started;
}

describe('ResilientWatch', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.parse('2026-05-01T00:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  it('lists in pages, then hands over each burst of events as one delta of what changed', async () => {
    const c = new Collection();
    for (const n of ['a', 'b', 'c']) c.put(n);
    const { watch, deltas } = watchOf(c);
    await startAndSync(watch);
    expect(c.lists).toBe(2); // pages of 2
    expect(deltas).toEqual([
      {
        changed: [{ name: 'a' }, { name: 'b' }, { name: 'c' }].map((x) => ({ ...x, data: '' })),
        deleted: [],
      },
    ]);
    c.put('a', 'one');
    c.put('a', 'two');
    c.remove('b');
    await advance(50);
    // The two changes of a in one burst are one entry, as the store holds it now.
    expect(deltas[1]).toEqual({ changed: [{ name: 'a', data: 'two' }], deleted: [{ name: 'b' }] });
    expect([...watch.objects.keys()].sort()).toEqual(['a', 'c']);
    await watch.stop();
  });

  it('after an error, re-lists with back-off and hands over what changed while it was down', async () => {
    const c = new Collection();
    c.put('a');
    c.put('b');
    const { watch, deltas, restarts } = watchOf(c);
    await startAndSync(watch);
    c.drop(new Error('connection reset'));
    c.down = true;
    // Changes the watch cannot see: the re-list must find them.
    c.put('a', 'changed');
    c.remove('b');
    c.put('new');
    const listsBefore = c.lists;
    await advance(60_000);
    // Back-off from 0.5 s doubling to 30 s: a handful of attempts in a minute, not a busy loop.
    const attempts = c.lists - listsBefore;
    expect(attempts).toBeGreaterThanOrEqual(4);
    expect(attempts).toBeLessThanOrEqual(9);
    expect(restarts.every((r) => r === 'error')).toBe(true);
    c.down = false;
    await advance(31_000);
    expect(deltas.at(-1)).toEqual({
      changed: [
        { name: 'a', data: 'changed' },
        { name: 'new', data: '' },
      ],
      deleted: [{ name: 'b' }],
    });
    expect([...watch.objects.keys()].sort()).toEqual(['a', 'new']);
    await watch.stop();
  });

  it('a watch the API server ends resumes without a list; 410 Gone re-lists at once', async () => {
    const c = new Collection();
    c.put('a');
    const { watch, restarts } = watchOf(c);
    await startAndSync(watch);
    c.put('a', 'x'); // an event, so the watch is not one that ended at once
    await advance(2000);
    const lists = c.lists;
    c.drop(null); // the API server's periodic end of a watch
    await advance(100);
    expect(c.lists).toBe(lists);
    expect(c.watches).toHaveLength(1);
    expect(restarts).toEqual([]);
    c.drop(new ApiError(410, '{}', 'watch'));
    await advance(100);
    expect(restarts).toEqual(['resync']);
    expect(c.lists).toBe(lists + 1);
    await watch.stop();
  });

  it('re-lists every resyncMs even when the watch looks healthy, and a re-list of nothing new hands over nothing', async () => {
    const c = new Collection();
    c.put('a');
    const { watch, deltas, restarts } = watchOf(c, { resyncMs: 10_000 });
    await startAndSync(watch);
    await advance(35_000);
    expect(restarts).toEqual(['resync', 'resync', 'resync']);
    // The first list's delta only: the re-lists found nothing changed.
    expect(deltas.filter((d) => d.changed.length + d.deleted.length > 0)).toHaveLength(1);
    await watch.stop();
    const lists = c.lists;
    await advance(30_000);
    expect(c.lists).toBe(lists);
  });

  it('keeps the object it has when a re-list shows the same version, so readers and the store share it', async () => {
    const c = new Collection();
    c.put('a');
    c.put('b');
    const { watch, deltas } = watchOf(c, { resyncMs: 10_000 });
    await startAndSync(watch);
    const before = new Map(watch.objects);
    c.put('b', 'changed');
    await advance(100);
    const afterEvent = watch.objects.get('b');
    await advance(10_000); // one re-list
    // 'a' is the very object the first list gave (a reader that kept it holds the store's); 'b'
    // the one its event gave. A copy for each would hold every object twice after each re-list.
    expect(watch.objects.get('a')).toBe(before.get('a'));
    expect(watch.objects.get('b')).toBe(afterEvent);
    expect(deltas.at(-2)).toEqual({ changed: [{ name: 'b', data: 'changed' }], deleted: [] });
    expect(deltas.at(-1)).toEqual({ changed: [], deleted: [] }); // the re-list: nothing new
    await watch.stop();
  });

  describe('streamed lists (WatchList)', () => {
    it("streams the list as the watch's first events, with no list request, and goes on watching", async () => {
      const c = new Collection();
      c.streams = true;
      for (const n of ['a', 'b', 'c']) c.put(n);
      const { watch, deltas } = watchOf(c);
      await startAndSync(watch);
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 0, streamed: 1 });
      expect(deltas).toEqual([
        {
          changed: [{ name: 'a' }, { name: 'b' }, { name: 'c' }].map((x) => ({ ...x, data: '' })),
          deleted: [],
        },
      ]);
      c.put('a', 'one');
      c.remove('b');
      await advance(50);
      expect(deltas[1]).toEqual({
        changed: [{ name: 'a', data: 'one' }],
        deleted: [{ name: 'b' }],
      });
      expect(c.watches).toHaveLength(1);
      await watch.stop();
    });

    it('an API server that refuses to stream a list is asked once; the watch lists in pages from then on', async () => {
      const c = new Collection();
      c.put('a');
      const { watch, deltas, restarts } = watchOf(c, { resyncMs: 10_000 });
      await startAndSync(watch);
      expect(deltas).toEqual([{ changed: [{ name: 'a', data: '' }], deleted: [] }]);
      await advance(25_000); // two re-lists
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 3, streamed: 1 });
      // Falling back is no failure: no back-off, no error restart.
      expect(restarts).toEqual(['resync', 'resync']);
      await watch.stop();
    });

    it('a watch made later on the same client does not ask again', async () => {
      const c = new Collection();
      c.put('a');
      const api = c.api();
      const first = watchOf(c, { api });
      await startAndSync(first.watch);
      const second = watchOf(c, { api });
      await startAndSync(second.watch);
      expect(second.deltas).toEqual([{ changed: [{ name: 'a', data: '' }], deleted: [] }]);
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 2, streamed: 1 });
      await Promise.all([first.watch.stop(), second.watch.stop()]);
    });

    it('a stream cut before its last initial event hands over nothing; pages follow, then streams again', async () => {
      const c = new Collection();
      c.streams = true;
      c.cutAfter = 1;
      c.put('a');
      c.put('b');
      const { watch, deltas, restarts } = watchOf(c);
      const started = watch.start();
      await advance(100);
      expect(watch.hasSynced).toBe(false);
      expect(deltas).toEqual([]);
      expect(restarts).toEqual(['error']);
      await advance(1000); // the back-off: 0.5 s ±25 %
      await started;
      expect(deltas).toEqual([
        {
          changed: [
            { name: 'a', data: '' },
            { name: 'b', data: '' },
          ],
          deleted: [],
        },
      ]);
      // A server that cut every stream could keep a watch from ever syncing: the next list is
      // read in pages.
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 1, streamed: 1 });
      c.drop(new Error('connection reset'));
      await advance(2000); // the second failure in a row: 1 s ±25 %
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 1, streamed: 2 });
      await watch.stop();
    });

    it("a stream refused with 400 (this watch's own query) leaves other watches on the client streaming", async () => {
      const c = new Collection();
      c.put('a');
      c.refusal = 400;
      const api = c.api();
      const first = watchOf(c, { api });
      await startAndSync(first.watch);
      c.streams = true;
      const second = watchOf(c, { api });
      await startAndSync(second.watch);
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 1, streamed: 2 });
      await Promise.all([first.watch.stop(), second.watch.stop()]);
    });

    it('a server that ignores the query (a bookmark before the end) is taken as one that does not stream', async () => {
      const c = new Collection();
      c.ignoresStreams = true;
      c.put('a');
      const { watch, deltas, restarts } = watchOf(c);
      await startAndSync(watch);
      expect(deltas).toEqual([{ changed: [{ name: 'a', data: '' }], deleted: [] }]);
      expect({ lists: c.lists, streamed: c.streamed }).toEqual({ lists: 1, streamed: 1 });
      expect(restarts).toEqual([]);
      await watch.stop();
    });

    it('a re-list by stream keeps the objects it has at the same version and hands over only what changed', async () => {
      const c = new Collection();
      c.streams = true;
      c.put('a');
      c.put('b');
      const { watch, deltas } = watchOf(c, { resyncMs: 10_000 });
      await startAndSync(watch);
      const before = new Map(watch.objects);
      c.drop(new Error('connection reset'));
      c.put('b', 'changed'); // unseen: the re-list must find it
      await advance(2000); // the back-off, then a stream
      expect(watch.objects.get('a')).toBe(before.get('a'));
      expect(watch.objects.get('b')?.data).toBe('changed');
      expect(deltas.at(-1)).toEqual({ changed: [{ name: 'b', data: 'changed' }], deleted: [] });
      await advance(10_000); // the periodic re-list, by stream too: nothing new
      expect(deltas.at(-1)).toEqual({ changed: [], deleted: [] });
      expect(watch.objects.get('a')).toBe(before.get('a'));
      expect(c.lists).toBe(0);
      await watch.stop();
    });

    it('while the API server is down, streams and lists are tried with back-off, not in a busy loop', async () => {
      const c = new Collection();
      c.streams = true;
      c.put('a');
      const api = c.api();
      const { watch, restarts } = watchOf(c, { api });
      await startAndSync(watch);
      c.down = true;
      c.drop(new Error('connection reset'));
      const before = c.streamed + c.lists;
      await advance(60_000);
      const attempts = c.streamed + c.lists - before;
      expect(attempts).toBeGreaterThanOrEqual(4);
      expect(attempts).toBeLessThanOrEqual(9);
      expect(restarts.every((r) => r === 'error')).toBe(true);
      c.down = false;
      await advance(31_000);
      expect(c.watches).toHaveLength(1);
      await watch.stop();
      // A 503 is no refusal: a watch made later on the same client streams.
      const streamed = c.streamed;
      const later = watchOf(c, { api });
      await startAndSync(later.watch);
      expect(c.streamed).toBe(streamed + 1);
      await later.watch.stop();
    });
  });
});
