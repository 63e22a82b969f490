// Leader election (kube/src/leader.ts) against the real API server: of two candidates on one
// Lease exactly one leads, never both (even when both write the same Lease version at once),
// and a follower takes over within the lease duration when the leader stops or vanishes.

import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { KubeApi, LeaderElector, accessOf, type KubeLogger } from '@outrigger/kube';
import { connect, done, pending, waitFor, withNamespace, type Cluster } from '../src';

const LEASE_SECONDS = 3;
const RETRY_MS = 300;
/** The leader renews every third of the lease duration (kube/src/leader.ts). */
const RENEW_EVERY_MS = (LEASE_SECONDS * 1000) / 3;
/** Counts the 409s the candidates met: the race test must really race. */
let conflicts = 0;
const quiet: KubeLogger = {
  log: (_level, message, meta) => {
    if (message === 'lease update failed' && meta?.status === 409) conflicts++;
  },
};

const cluster: Cluster = connect();
const coordination = cluster.kubeConfig.makeApiClient(CoordinationV1Api);

afterAll(async () => {
  await cluster.close();
});

interface Candidate {
  elector: LeaderElector;
  events: string[];
}

function candidate(namespace: string, name: string, identity: string): Candidate {
  const events: string[] = [];
  const elector = new LeaderElector({
    api: new KubeApi(accessOf(cluster.kubeConfig)),
    namespace,
    name,
    identity,
    leaseDurationSeconds: LEASE_SECONDS,
    retryPeriodMs: RETRY_MS,
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => events.push('stopped'),
    logger: quiet,
  });
  return { elector, events };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The Lease's renewTime as the API server holds it, in ms; undefined while it has none. */
async function renewedAt(namespace: string, name: string): Promise<number | undefined> {
  const lease = await coordination.readNamespacedLease({ namespace, name });
  const renew = lease.spec?.renewTime;
  return renew ? new Date(renew).getTime() : undefined;
}

/**
 * Samples isLeader of every candidate, failing on any moment with two leaders, until the Lease
 * has been renewed `renewals` times since the first look (the positive signal that the others
 * had their chances to take it); returns every leader seen, in turn. At most 30 s.
 */
async function watchLeaders(
  candidates: Candidate[],
  lease: { namespace: string; name: string },
  renewals: number,
): Promise<string[]> {
  const leaders: string[] = [];
  const renewTimes = new Set<number>();
  const deadline = Date.now() + 30_000;
  for (let look = 0; renewTimes.size <= renewals; look++) {
    const now = candidates.filter((c) => c.elector.isLeader).map((c) => c.elector.identity);
    expect(now.length).toBeLessThanOrEqual(1);
    if (now[0] && leaders.at(-1) !== now[0]) leaders.push(now[0]);
    if (look % 5 === 0) {
      const renewed = await renewedAt(lease.namespace, lease.name);
      if (renewed !== undefined) renewTimes.add(renewed);
    }
    if (Date.now() > deadline)
      throw new Error(`the Lease ${lease.name} was renewed ${renewTimes.size - 1} times in 30 s`);
    await sleep(20);
  }
  return leaders;
}

async function waitForLeader(candidates: Candidate[], timeoutMs: number): Promise<Candidate> {
  return waitFor(
    'a leader',
    () => {
      const leaders = candidates.filter((c) => c.elector.isLeader);
      return leaders[0] ? done(leaders[0]) : pending('no leader yet');
    },
    { timeoutMs, intervalMs: 20 },
  );
}

async function holderOf(namespace: string, name: string): Promise<string | undefined> {
  const lease = await coordination.readNamespacedLease({ namespace, name });
  return lease.spec?.holderIdentity;
}

describe('LeaderElector', () => {
  it('elects exactly one of two candidates and hands over fast when the leader stops', async () => {
    await withNamespace(cluster, { prefix: 'leader' }, async (namespace) => {
      const a = candidate(namespace, 'outrigger', 'a');
      const b = candidate(namespace, 'outrigger', 'b');
      a.elector.start();
      b.elector.start();
      try {
        const leader = await waitForLeader([a, b], 10_000);
        const follower = leader === a ? b : a;
        // Renewed past two lease durations: the follower's retries met a held Lease throughout.
        const renewals = Math.ceil((2 * LEASE_SECONDS * 1000) / RENEW_EVERY_MS);
        expect(await watchLeaders([a, b], { namespace, name: 'outrigger' }, renewals)).toEqual([
          leader.elector.identity,
        ]);
        expect(await holderOf(namespace, 'outrigger')).toBe(leader.elector.identity);
        expect(follower.events).toEqual([]);

        const stoppedAt = Date.now();
        await leader.elector.stop();
        expect(leader.events).toEqual(['started', 'stopped']);
        expect(leader.elector.isLeader).toBe(false);
        await waitForLeader([follower], LEASE_SECONDS * 1000);
        // Released, not expired: the follower's next retry takes it.
        expect(Date.now() - stoppedAt).toBeLessThan(LEASE_SECONDS * 1000);
        expect(follower.events).toEqual(['started']);
        expect(await holderOf(namespace, 'outrigger')).toBe(follower.elector.identity);
      } finally {
        await Promise.all([a.elector.stop(), b.elector.stop()]);
      }
    });
  });

  it('takes over a lease whose holder vanished only once it has expired', async () => {
    await withNamespace(cluster, { prefix: 'leader' }, async (namespace) => {
      await coordination.createNamespacedLease({
        namespace,
        body: {
          metadata: { name: 'outrigger' },
          spec: {
            holderIdentity: 'crashed',
            leaseDurationSeconds: LEASE_SECONDS,
            acquireTime: new V1MicroTime(),
            renewTime: new V1MicroTime(),
          },
        },
      });
      const createdAt = Date.now();
      const c = candidate(namespace, 'outrigger', 'c');
      c.elector.start();
      try {
        await waitForLeader([c], 2 * LEASE_SECONDS * 1000);
        const waited = Date.now() - createdAt;
        expect(waited).toBeGreaterThanOrEqual(LEASE_SECONDS * 1000 - 500);
        expect(waited).toBeLessThan(LEASE_SECONDS * 1000 + 3 * RETRY_MS + 1000);
        const lease = await coordination.readNamespacedLease({ namespace, name: 'outrigger' });
        expect(lease.spec?.holderIdentity).toBe('c');
        expect(lease.spec?.leaseTransitions).toBe(1);
      } finally {
        await c.elector.stop();
      }
    });
  });

  it('never has two leaders when candidates race for the same lease version', async () => {
    await withNamespace(cluster, { prefix: 'leader' }, async (namespace) => {
      // Several rounds, each a free Lease and three candidates started in the same tick: they
      // read the same resourceVersion and write it at once, so all but one get 409 Conflict.
      conflicts = 0;
      for (let round = 0; round < 4; round++) {
        const name = `race-${round}`;
        await coordination.createNamespacedLease({
          namespace,
          body: { metadata: { name }, spec: { holderIdentity: '', leaseDurationSeconds: 1 } },
        });
        const all = ['x', 'y', 'z'].map((id) => candidate(namespace, name, `${id}${round}`));
        for (const c of all) c.elector.start();
        try {
          await waitForLeader(all, 10_000);
          const leaders = await watchLeaders(all, { namespace, name }, 2);
          expect(leaders).toHaveLength(1);
          expect(all.filter((c) => c.events.length > 0)).toHaveLength(1);
          expect(await holderOf(namespace, name)).toBe(leaders[0]);
        } finally {
          await Promise.all(all.map((c) => c.elector.stop()));
        }
      }
      expect(conflicts).toBeGreaterThan(0);
    });
  });
});
