// outrigger-webhook: wires flags, configuration, certificate and namespace watches, and the two
// servers; handles SIGTERM by failing readiness, finishing what is in flight, then exiting.

import type { Server as HttpsServer } from 'node:https';
import type { KubeApi } from '@outrigger/kube';
import { runComponent } from '@outrigger/kube/without-api';
import {
  historyConfigMapName,
  pinnedSnapshot,
  type ConfigSnapshot,
  type NamespaceMeta,
} from '@outrigger/shared';
import type * as Cluster from './cluster';
import type { AdmissionState } from './admit';
import {
  ConfigStore,
  DefaultConfigSource,
  FileConfigSource,
  RevisionRefresher,
  type ConfigSource,
} from './config-source';
import { BodyBudget } from './body';
import type { HistorySource } from './history-source';
import { LargeBodyWorker } from './large-bodies';
import { USAGE, parseFlags, type WebhookFlags } from './flags';
import { createLogger, type Logger } from './log';
import { WebhookMetrics } from './metrics';
import { createAdmissionHandler } from './admission-handler';
import { boundPort, closeUnusedConnections, startHttps, startMetricsServer } from './server';
import { FileTlsSource, TlsStore, type KeyPair, type TlsSource } from './tls';
import { waitUntil } from './wait-until';

export interface Webhook {
  httpsPort: number;
  metricsPort: number;
  ready: () => boolean;
  /** Fails readiness, waits the shutdown delay, lets in-flight requests finish, stops everything. */
  shutdown: () => Promise<void>;
}

export interface WebhookDeps {
  logger: Logger;
  metrics: WebhookMetrics;
}

/** The API server and the module that reads it, loaded only when there is one (cluster.ts). */
interface Api {
  kube: KubeApi;
  cluster: typeof Cluster;
}

function apiNeeded(flags: WebhookFlags): boolean {
  return Boolean(
    flags.kubeconfig || flags.configMap || flags.tlsSecret || process.env.KUBERNETES_SERVICE_HOST,
  );
}

/** The API server, when the flags or the environment name one; undefined standalone. */
async function connect(flags: WebhookFlags): Promise<Api | undefined> {
  if (!apiNeeded(flags)) return undefined;
  const cluster = await import('./cluster.js');
  return { kube: cluster.connectApi(flags.kubeconfig), cluster };
}

function configSource(
  flags: WebhookFlags,
  store: ConfigStore,
  api: Api | undefined,
  deps: WebhookDeps,
): ConfigSource {
  if (flags.configFile) return new FileConfigSource(store, flags.configFile);
  if (flags.configMap && api)
    return new api.cluster.ConfigMapSource(store, api.kube, flags.configMap, deps);
  return new DefaultConfigSource(store);
}

function tlsSource(
  flags: WebhookFlags,
  store: TlsStore,
  api: Api | undefined,
  deps: WebhookDeps,
): TlsSource {
  if (flags.tlsSecret && api)
    return new api.cluster.SecretTlsSource(store, api.kube, flags.tlsSecret, deps);
  return new FileTlsSource(
    store,
    { certFile: flags.tlsCertFile ?? '', keyFile: flags.tlsKeyFile ?? '' },
    deps.logger,
  );
}

/**
 * Starts the probe server first, then waits (with /readyz false and progress in the log) for
 * the API, the configuration, the namespaces and the serving certificate, in whatever order
 * they come: on a fresh install the controller creates the certificate's Secret after the
 * webhook starts. Anything started is stopped again if the start fails or is aborted.
 */
export async function startWebhook(
  flags: WebhookFlags,
  deps: WebhookDeps,
  signal: AbortSignal = new AbortController().signal,
): Promise<Webhook> {
  const stops: Stop[] = [];
  try {
    return await start(flags, deps, signal, stops);
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw err;
  }
}

type Stop = () => Promise<void>;

/** Native sidecars as the flag says, or (auto) as the API server's version says. */
function nativeSidecars(
  flags: WebhookFlags,
  api: Api | undefined,
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  if (flags.nativeSidecars !== 'auto') return Promise.resolve(flags.nativeSidecars === 'supported');
  if (!api) return Promise.resolve(true);
  return waitUntil({
    what: 'the API server (its version tells whether native sidecars are supported)',
    attempt: () => api.cluster.clusterSupportsNativeSidecars(api.kube),
    logger,
    signal,
  });
}

interface Sources {
  /** The state in force; undefined until configuration and namespaces are loaded. */
  state: () => AdmissionState | undefined;
  /** Changes whenever the state does. */
  version: () => number;
  configStore: ConfigStore;
  config: ConfigSource;
  /** The revision history; absent without a ConfigMap to watch. */
  history: HistorySource | undefined;
  /** Whether the revision is held: in force once, or in the history. */
  hasSeen: (revision: string) => boolean;
  tlsStore: TlsStore;
}

/** The history's snapshots but the current revision's: what pinned pods get. */
function pinnedSnapshots(
  snapshot: ConfigSnapshot,
  history: HistorySource | undefined,
): Map<string, ConfigSnapshot> {
  const pinned = new Map<string, ConfigSnapshot>();
  for (const [revision, content] of history?.contents ?? [])
    if (revision !== snapshot.revision) pinned.set(revision, pinnedSnapshot(snapshot, content));
  return pinned;
}

/** Starts the configuration, certificate and namespace sources; resolves once each has listed. */
async function startSources(
  options: { flags: WebhookFlags; api: Api | undefined; native: boolean; stops: Stop[] },
  deps: WebhookDeps,
): Promise<Sources> {
  const { flags, api, native } = options;
  const inCluster = api !== undefined;
  let namespaces: ReadonlyMap<string, NamespaceMeta> | undefined = inCluster
    ? undefined
    : new Map();
  let state: AdmissionState | undefined;
  let version = 0;
  const configStore = new ConfigStore(deps.logger, deps.metrics);
  let history: HistorySource | undefined;
  // Made again only when the configuration or the history changes, not on every namespace event.
  let pinned = new Map<string, ConfigSnapshot>();
  const repin = (): void => {
    const snapshot = configStore.current;
    pinned = snapshot ? pinnedSnapshots(snapshot, history) : new Map<string, ConfigSnapshot>();
    rebuild();
  };
  const rebuild = (): void => {
    version++;
    const snapshot = configStore.current;
    // Standalone (no API) means every namespace that reaches us counts as opted in.
    const nsView = inCluster ? namespaces : undefined;
    state =
      snapshot && (!inCluster || namespaces)
        ? {
            snapshot,
            pinned,
            pinnedSets: history?.setContents,
            namespaces: nsView,
            nativeSidecarSupported: native,
            systemNamespace: flags.systemNamespace,
          }
        : undefined;
  };
  configStore.onChange(repin);
  const config = configSource(flags, configStore, api, deps);
  if (flags.configMap && api && !flags.configFile) {
    const { namespace, name } = flags.configMap;
    const ref = { namespace, name: historyConfigMapName(name) };
    history = new api.cluster.HistorySource(api.kube, ref, deps, repin);
  }
  const tlsStore = new TlsStore(deps.logger, deps.metrics);
  const tls = tlsSource(flags, tlsStore, api, deps);
  const nsWatch = api
    ? api.cluster.namespaceWatch(api.kube, deps, (map) => {
        namespaces = map;
        rebuild();
      })
    : undefined;
  options.stops.push(
    () => config.stop(),
    () => tls.stop(),
    async () => nsWatch?.stop(),
    async () => history?.stop(),
  );
  await Promise.all([config.start(), tls.start(), nsWatch?.start(), history?.start()]);
  const hasSeen = (r: string): boolean =>
    configStore.hasSeen(r) || (history?.contents.has(r) ?? false);
  return {
    state: () => state,
    version: () => version,
    configStore,
    config,
    history,
    hasSeen,
    tlsStore,
  };
}

async function start(
  flags: WebhookFlags,
  deps: WebhookDeps,
  signal: AbortSignal,
  stops: Stop[],
): Promise<Webhook> {
  const { logger, metrics } = deps;
  const phase: { serving: boolean; shuttingDown: boolean; sources?: Sources } = {
    serving: false,
    shuttingDown: false,
  };
  const ready = (): boolean =>
    phase.serving && !phase.shuttingDown && phase.sources?.state() !== undefined;
  const http = await startMetricsServer(metrics, { live: () => true, ready }, flags.metricsListen);
  stops.push(() => new Promise((r) => http.close(() => r())));
  logger.info('probes and metrics listening', { port: boundPort(http) });

  const api = await connect(flags);
  const native = await nativeSidecars(flags, api, logger, signal);
  const started = await startSources({ flags, api, native, stops }, deps);
  phase.sources = started;
  const pair = await waitUntil({
    what: `the serving certificate (${tlsDescription(flags)})`,
    attempt: () => Promise.resolve(started.tlsStore.current),
    logger,
    signal,
  });
  const https = await serveAdmission({ flags, sources: started, pair, stops }, deps);
  phase.serving = true;
  logger.info('outrigger-webhook serving', {
    https: boundPort(https),
    metrics: boundPort(http),
    standalone: !api,
    nativeSidecars: native,
    revision: started.configStore.current?.revision ?? null,
  });

  const shutdown = async (): Promise<void> => {
    if (phase.shuttingDown) return;
    phase.shuttingDown = true;
    logger.info('shutting down: readiness off, finishing requests in flight', {
      delaySeconds: flags.shutdownDelaySeconds,
    });
    await new Promise((r) => setTimeout(r, flags.shutdownDelaySeconds * 1000));
    await drain(https);
    for (const stop of [...stops].reverse()) await stop();
    logger.info('stopped');
  };
  return { httpsPort: boundPort(https), metricsPort: boundPort(http), ready, shutdown };
}

/** The HTTPS admission server, taking each new certificate as it comes. */
async function serveAdmission(
  options: { flags: WebhookFlags; sources: Sources; pair: KeyPair; stops: Stop[] },
  deps: WebhookDeps,
): Promise<HttpsServer> {
  const { flags, sources, pair, stops } = options;
  const { configStore } = sources;
  const refresher = new RevisionRefresher({
    hasSeen: sources.hasSeen,
    refresh: async () => {
      await Promise.all([sources.config.refresh(), sources.history?.refresh()]);
    },
    metrics: deps.metrics,
  });
  const largeBodies = new LargeBodyWorker(
    () => ({
      state: sources.state(),
      seen: [...configStore.seenRevisions, ...(sources.history?.contents.keys() ?? [])],
      onError: flags.onError,
    }),
    sources.version,
  );
  stops.push(() => largeBodies.stop());
  const bodyBudget = new BodyBudget(flags.maxBodyBytesInFlight);
  deps.metrics.watchBodyBudget(bodyBudget);
  const handler = createAdmissionHandler({
    state: sources.state,
    hasSeen: sources.hasSeen,
    ensureRevision: (r) => refresher.ensure(r),
    largeBodies,
    metrics: deps.metrics,
    logger: deps.logger,
    onError: flags.onError,
    maxBodyBytes: flags.maxBodyBytes,
    bodyBudget,
  });
  const https = await startHttps(handler, pair, flags.listen, {
    maxConnections: flags.maxConnections,
    onEvicted: () => deps.metrics.connectionsRefused.inc(),
  });
  sources.tlsStore.onChange((p) =>
    https.setSecureContext({ cert: p.cert, key: p.key, minVersion: 'TLSv1.2' }),
  );
  return https;
}

function tlsDescription(flags: WebhookFlags): string {
  if (flags.tlsSecret)
    return `Secret ${flags.tlsSecret.namespace}/${flags.tlsSecret.name}, keys tls.crt and tls.key; in self-managed mode the controller creates it`;
  return `files ${flags.tlsCertFile ?? ''} and ${flags.tlsKeyFile ?? ''}`;
}

/** Stops accepting, closes connections as they become idle or if never used, waits for the rest. */
async function drain(server: HttpsServer, deadlineMs = 25_000): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  const sweep = setInterval(() => closeUnusedConnections(server), 50);
  const deadline = setTimeout(() => server.closeAllConnections(), deadlineMs);
  await closed;
  clearInterval(sweep);
  clearTimeout(deadline);
}

export function main(argv: string[]): Promise<number> {
  return runComponent(
    {
      name: 'outrigger-webhook',
      usage: USAGE,
      parse: parseFlags,
      logger: (flags) => createLogger(flags.logLevel),
      start: (flags, logger, signal) =>
        startWebhook(flags, { logger, metrics: new WebhookMetrics(undefined, true) }, signal),
    },
    argv,
  );
}
