// LeaderElector against a fake clock (jest's fake timers, which also drive Date.now) and a Lease
// kept in memory with the API server's rules for it: a create of an existing Lease and a replace
// with a stale resourceVersion are 409s. The end-to-end suite (e2e/test/leader.test.ts) runs the
// same elector against a real API server; these tests take it through minutes of time at once:
// renewals, a leader cut off from the API server, a clean handover, and write races.

import { ApiError, LeaderElector, type KubeApi } from '../src';

const LEASE = '/apis/coordination.k8s.io/v1/namespaces/sys/leases';
const SECOND = 1000;

/** One Lease, with resourceVersions; a candidate can be cut off from it. */
class LeaseStore {
  lease: { metadata: Record<string, unknown>; spec: Record<string, unknown> } | undefined;
  private version = 0;
  readonly cutOff = new Set<string>();
  writes = 0;

  /** The API as one candidate sees it. */
  apiFor(identity: string): KubeApi {
    const guard = () => {
      if (this.cutOff.has(identity)) throw new ApiError(503, '{}', 'the API server');
    };
    const api = {
      get: (path: string) => {
        guard();
        if (path !== `${LEASE}/lead` || !this.lease) throw new ApiError(404, '{}', 'get');
        return Promise.resolve(structuredClone(this.lease));
      },
      create: (
        path: string,
        body: { metadata: Record<string, unknown>; spec: Record<string, unknown> },
      ) => {
        guard();
        if (path !== LEASE || this.lease) throw new ApiError(409, '{}', 'create');
        return Promise.resolve(this.store(body));
      },
      replace: (
        path: string,
        body: { metadata: Record<string, unknown>; spec: Record<string, unknown> },
      ) => {
        guard();
        if (path !== `${LEASE}/lead` || !this.lease) throw new ApiError(404, '{}', 'replace');
        if (body.metadata.resourceVersion !== this.lease.metadata.resourceVersion)
          throw new ApiError(409, '{}', 'replace');
        return Promise.resolve(this.store(body));
      },
    };
    return api as unknown as KubeApi;
  }

  get holder(): unknown {
    return this.lease?.spec.holderIdentity;
  }

  private store(body: { metadata: Record<string, unknown>; spec: Record<string, unknown> }) {
    this.writes += 1;
    this.lease = structuredClone({
      ...body,
      metadata: { ...body.metadata, resourceVersion: String(++this.version) },
    });
    return structuredClone(this.lease);
  }
}

const quiet = { log: () => undefined };

function candidate(store: LeaseStore, identity: string) {
  const events: string[] = [];
  const elector = new LeaderElector({
    api: store.apiFor(identity),
    namespace: 'sys',
    name: 'lead',
    identity,
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => events.push('stopped'),
    logger: quiet,
  });
  return { elector, events };
}

/** a starts first and leads; b starts a second later and follows. */
async function aLeadsBFollows() {
  const store = new LeaseStore();
  const a = candidate(store, 'a');
  const b = candidate(store, 'b');
  a.elector.start();
  await advance(SECOND);
  b.elector.start();
  await advance(SECOND);
  return { store, a, b };
}

async function stopBoth(...cs: { elector: LeaderElector }[]): Promise<void> {
  for (const c of cs) await c.elector.stop();
}

/** Moves the fake clock, letting every promise the timers start settle on the way. */
async function advance(ms: number, step = 100): Promise<void> {
  for (let t = 0; t < ms; t += step) await jest.advanceTimersByTimeAsync(step);
}

describe('LeaderElector', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.parse('2026-05-01T00:00:00Z') }));
  afterEach(() => jest.useRealTimers());

  it('one leads, the other follows, and the leader renews every third of the lease', async () => {
    const { store, a, b } = await aLeadsBFollows();
    expect([a.elector.isLeader, b.elector.isLeader]).toEqual([true, false]);
    const before = store.writes;
    await advance(60 * SECOND);
    // 15 s lease: a renewal every 5 s, and no one else writes the Lease.
    expect(store.writes - before).toBe(12);
    expect(store.holder).toBe('a');
    expect(b.events).toEqual([]);
    await stopBoth(a, b);
  });

  it('a leader cut off from the API server stops leading before its Lease expires, then another leads', async () => {
    const { store, a, b } = await aLeadsBFollows();
    store.cutOff.add('a');
    const cutAt = Date.now();
    let aLostAt: number | undefined;
    let bLedAt: number | undefined;
    for (let t = 0; t < 40 * SECOND; t += 100) {
      await advance(100);
      // Never two leaders at one instant, by either's own account.
      expect(a.elector.isLeader && b.elector.isLeader).toBe(false);
      if (aLostAt === undefined && !a.elector.isLeader) aLostAt = Date.now();
      if (bLedAt === undefined && b.elector.isLeader) bLedAt = Date.now();
    }
    // a renewed last at most 5 s before the cut; it gives up 13 s (15 less a retry) after that.
    expect((aLostAt ?? Infinity) - cutAt).toBeLessThanOrEqual(13 * SECOND);
    // b takes over only once the Lease, last renewed before the cut, has expired.
    expect((bLedAt ?? Infinity) - cutAt).toBeGreaterThan(10 * SECOND);
    expect(bLedAt).toBeGreaterThan(aLostAt ?? Infinity);
    expect(store.holder).toBe('b');
    expect(a.events).toEqual(['started', 'stopped']);
    expect(b.events).toEqual(['started']);
    await stopBoth(a, b);
  });

  it('a leader that stops releases the Lease, and the follower leads within a retry period', async () => {
    const { store, a, b } = await aLeadsBFollows();
    await advance(9 * SECOND);
    const stoppedAt = Date.now();
    await a.elector.stop();
    expect(a.events).toEqual(['started', 'stopped']);
    expect(store.holder).toBe('');
    while (!b.elector.isLeader && Date.now() - stoppedAt < 60 * SECOND) await advance(100);
    // The retry period is 2 s, with up to 20 % jitter: not the 15 s of an expiry.
    expect(Date.now() - stoppedAt).toBeLessThanOrEqual(2.5 * SECOND);
    await b.elector.stop();
  });

  it('of two that start at the same instant, the write that lands first leads; the 409 loser follows', async () => {
    const store = new LeaseStore();
    const a = candidate(store, 'a');
    const b = candidate(store, 'b');
    a.elector.start();
    b.elector.start();
    await advance(30 * SECOND);
    const leaders = [a, b].filter((c) => c.elector.isLeader);
    expect(leaders).toHaveLength(1);
    expect(store.holder).toBe(leaders[0]?.elector.identity);
    expect([...a.events, ...b.events]).toEqual(['started']);
    await stopBoth(a, b);
  });
});
