// The list-watch both components build on (kube/src/resilient-watch.ts ResilientWatch) against a real API
// server, through a TCP proxy the test controls: the client's own informer stops for good on
// errors other than 410 (kubernetes-client/javascript #596, #958). Ours must come back by
// itself when the connection drops, when the API server cannot be reached for a while, and when
// the connection goes silent without an error, and count each restart.

import { createServer, connect as tcpConnect, type Server, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import { KubeApi, ResilientWatch, accessOf } from '@outrigger/kube';
import {
  connect,
  createNamespace,
  deleteNamespace,
  done,
  pending,
  waitFor,
  type Cluster,
} from '../src';

const LABEL = 'e2e.outrigger.dev/watch-run';
const run = randomBytes(4).toString('hex');
const cluster: Cluster = connect();
const namespaces: string[] = [];

/** Forwards TCP to the API server; the test can drop every connection, refuse, or freeze them. */
class ChaosProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<[Socket, Socket]>();
  mode: 'pass' | 'refuse' = 'pass';
  port = 0;

  constructor(
    private readonly host: string,
    private readonly upstreamPort: number,
  ) {}

  async start(): Promise<void> {
    this.server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  private accept(client: Socket): void {
    if (this.mode === 'refuse') {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(this.upstreamPort, this.host);
    const pair: [Socket, Socket] = [client, upstream];
    this.pairs.add(pair);
    const end = (): void => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  }

  /** Every open connection closed at once, as when a load balancer or the network drops them. */
  dropAll(): void {
    for (const [client, upstream] of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
  }

  /** Every open connection stays open but carries nothing more: a silent watch, no error. */
  freezeAll(): void {
    for (const [client, upstream] of this.pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  async stop(): Promise<void> {
    this.dropAll();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

function throughProxy(port: number): KubeConfig {
  const kc = new KubeConfig();
  const base = cluster.kubeConfig;
  const server = base.getCurrentCluster();
  const user = base.getCurrentUser();
  if (!server || !user) throw new Error('the kubeconfig has no current cluster or user');
  const url = new URL(server.server);
  url.port = String(port);
  kc.loadFromOptions({
    clusters: [{ ...server, name: 'proxied', server: url.toString().replace(/\/$/, '') }],
    users: [user],
    contexts: [{ name: 'proxied', cluster: 'proxied', user: user.name }],
    currentContext: 'proxied',
  });
  return kc;
}

let proxy: ChaosProxy;
let kc: KubeConfig;
const watches: ResilientWatch<V1Namespace>[] = [];

/** A watch of this run's namespaces through the proxy, and what it has seen and done. */
async function startWatch(resyncMs: number) {
  const state = {
    seen: [] as string[],
    restarts: { error: 0, resync: 0 },
    logs: [] as { message: string; fields?: Record<string, unknown> }[],
  };
  const selector = `${LABEL}=${run}`;
  const watch = new ResilientWatch<V1Namespace>({
    api: new KubeApi(accessOf(kc)),
    path: '/api/v1/namespaces',
    labelSelector: selector,
    onChange: (items) => (state.seen = items.map((n) => n.metadata?.name ?? '')),
    onRestart: (reason) => (state.restarts[reason] += 1),
    logger: { log: (_level, message, fields) => state.logs.push({ message, fields }) },
    resource: 'namespaces (through the proxy)',
    resyncMs,
  });
  watches.push(watch);
  await watch.start();
  return state;
}

beforeAll(async () => {
  const url = new URL(cluster.kubeConfig.getCurrentCluster()?.server ?? '');
  proxy = new ChaosProxy(url.hostname, Number(url.port || 443));
  await proxy.start();
  kc = throughProxy(proxy.port);
});

afterAll(async () => {
  await Promise.all(watches.map((w) => w.stop()));
  await proxy.stop();
  await Promise.all(namespaces.map((ns) => deleteNamespace(cluster, ns)));
  await cluster.close();
});

async function newNamespace(prefix: string): Promise<string> {
  const name = await createNamespace(cluster, {
    prefix,
    labels: { [LABEL]: run },
    waitForDefaultServiceAccount: false,
  });
  namespaces.push(name);
  return name;
}

type WatchState = Awaited<ReturnType<typeof startWatch>>;

const sees = (state: WatchState, name: string, timeoutMs = 20_000) =>
  waitFor(
    `the watch to see namespace ${name}`,
    () => (state.seen.includes(name) ? done(undefined) : pending(state)),
    { timeoutMs },
  );

describe('ResilientWatch through a proxy that misbehaves', () => {
  it('has its list streamed by this API server (WatchList), once more on each re-list', async () => {
    const name = await newNamespace('watch-streamed');
    const state = await startWatch(2000);
    expect(state.seen).toContain(name);
    await waitFor('a re-list', () =>
      state.restarts.resync > 0 && state.logs.filter((l) => l.message === 'listed').length > 1
        ? done(undefined)
        : pending(state.logs),
    );
    const lists = state.logs.filter((l) => l.message === 'listed');
    expect(lists.map((l) => l.fields?.how)).toEqual(lists.map(() => 'stream'));
    expect(state.logs.map((l) => l.message)).not.toContain(
      'the API server does not stream this list; listing in pages',
    );
  });

  it('comes back after every connection is dropped and the API server is unreachable for a while', async () => {
    // No periodic re-list within the test: only the error path can bring it back.
    const state = await startWatch(10 * 60_000);
    await sees(state, await newNamespace('watch-healthy'));
    proxy.mode = 'refuse';
    proxy.dropAll();
    const missed = await newNamespace('watch-outage');
    const failedBefore = state.restarts.error;
    // A reconnection tried and refused after the namespace existed: it could not have seen it.
    await waitFor('a reconnection to fail after the namespace was made', () =>
      state.restarts.error > failedBefore ? done(undefined) : pending(state.restarts),
    );
    expect(state.seen).not.toContain(missed);
    proxy.mode = 'pass';
    await sees(state, missed);
    expect(state.restarts.error).toBeGreaterThan(0);
    expect(state.restarts.resync).toBe(0);
  });

  it('replaces a watch that went silent without an error, at the latest on its re-list', async () => {
    const state = await startWatch(4000);
    await sees(state, namespaces.at(-1) ?? '');
    proxy.freezeAll();
    const quiet = await newNamespace('watch-silent');
    await sees(state, quiet, 15_000);
    expect(state.restarts.resync).toBeGreaterThan(0);
  });
});
