// outrigger-controller: wires flags, the watches, leader election, the work queue and the
// metrics server; on SIGTERM it releases the Lease (so a follower takes over at once) and stops.

import type { Server as HttpServer } from 'node:http';
import type { KubernetesObject } from '@kubernetes/client-node';
import {
  LeaderElector,
  ResilientWatch,
  boundPort,
  defaultIdentity,
  KubeApi,
  loadClusterAccess,
  runComponent,
  startProbeServer,
} from '@outrigger/kube';
import { Controller } from './controller';
import { InjectedPods } from './watch/injected-pods';
import { USAGE, parseFlags, type ControllerFlags } from './flags';
import { createLogger, type Logger } from './log';
import { ControllerMetrics } from './metrics';
import { certificateWatches, fixedWatches, type WatchDeps } from './watch/watches';

export interface Running {
  metricsPort: number;
  ready: () => boolean;
  shutdown: () => Promise<void>;
}

export interface ControllerDeps {
  logger: Logger;
  metrics: ControllerMetrics;
}

function elector(
  api: KubeApi,
  flags: ControllerFlags,
  controller: Controller,
  deps: ControllerDeps & { identity: string },
) {
  const { identity } = deps;
  return new LeaderElector({
    api,
    namespace: flags.namespace,
    name: flags.leaseName,
    identity,
    onStartedLeading: () => controller.startLeading(),
    onStoppedLeading: () => void controller.stopLeading(),
    logger: deps.logger,
  });
}

/**
 * Starts the controller: its probes, its watches, then (once every watch has listed) leader
 * election or, without it, leading at once. Stopped (`signal`) while the watches list, it stops
 * what it started and throws, and never leads.
 */
export async function startController(
  flags: ControllerFlags,
  deps: ControllerDeps,
  signal?: AbortSignal,
): Promise<Running> {
  const { logger, metrics } = deps;
  // How long starting Node.js and loading the code took: the part of a start before any request.
  logger.debug('starting', { uptimeMs: Math.round(process.uptime() * 1000) });
  const api = new KubeApi(loadClusterAccess(flags.kubeconfig));
  const identity = defaultIdentity();
  // Made after the controller, whose leading it starts and stops.
  const election: { leader?: LeaderElector } = {};
  const controller: Controller = new Controller({
    api,
    systemNamespace: flags.namespace,
    configMap: flags.configMap,
    logger,
    metrics,
    identity,
    webhookReadyUrl: flags.webhookReadyUrl,
    writeLimit: { ratePerSecond: flags.writeQps, burst: flags.writeBurst },
    certificates: flags.certificates,
    policies: flags.policies,
    injectedPods: (c) => new InjectedPods({ api, controller: c, logger, metrics }),
    // Before the elector exists nothing leads, so nothing writes.
    mayWrite: () => (election.leader ? election.leader.isLeader : !flags.leaderElect),
  });
  const watchDeps: WatchDeps = { api, controller, logger, metrics };
  const injected = controller.injectedPods;
  const watches: ResilientWatch<KubernetesObject>[] = [
    ...fixedWatches(watchDeps),
    ...certificateWatches(watchDeps),
  ];
  let stopping = false;
  const ready = (): boolean =>
    !stopping && watches.every((w) => w.hasSynced) && injected.hasListedOnce;
  const http: HttpServer = await startProbeServer(
    metrics.registry,
    { live: () => controller.live, ready },
    flags.metricsListen,
  );
  const listed = await Promise.race([
    Promise.all(watches.map((w) => w.start())).then(() => true),
    aborted(signal),
  ]);
  if (!listed) {
    // Stopped while the watches still list (the API server may be out of reach): end now.
    await Promise.all([...watches.map((w) => w.stop()), injected.stop()]);
    await new Promise((r) => http.close(r));
    throw new Error('stopped before every watch had listed');
  }
  const leader = flags.leaderElect
    ? elector(api, flags, controller, { ...deps, identity })
    : undefined;
  election.leader = leader;
  if (leader) leader.start();
  else controller.startLeading();
  logger.info('outrigger-controller running', {
    metrics: boundPort(http),
    namespace: flags.namespace,
    configMap: `${flags.configMap.namespace}/${flags.configMap.name}`,
    leaderElect: flags.leaderElect,
    lease: flags.leaderElect ? `${flags.namespace}/${flags.leaseName}` : null,
    identity,
    // Every watch has listed: the process's age then is its start-up time.
    uptimeMs: Math.round(process.uptime() * 1000),
  });

  const shutdown = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    // The queue first, with the reconciles in flight: no write may happen once the Lease is
    // released, or the next leader and this one would both act on the same wave.
    await controller.stopLeading();
    await leader?.stop();
    await Promise.all([...watches.map((w) => w.stop()), injected.stop()]);
    await new Promise((r) => http.close(r));
    logger.info('stopped');
  };
  return { metricsPort: boundPort(http), ready, shutdown };
}

export function main(argv: string[]): Promise<number> {
  return runComponent(
    {
      name: 'outrigger-controller',
      usage: USAGE,
      parse: parseFlags,
      logger: (flags) => createLogger(flags.logLevel),
      start: (flags, logger, signal) =>
        startController(flags, { logger, metrics: new ControllerMetrics(undefined, true) }, signal),
    },
    argv,
  );
}

/** Resolves false once `signal` aborts; never without one. */
function aborted(signal: AbortSignal | undefined): Promise<false> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    signal?.addEventListener('abort', () => resolve(false), { once: true });
  });
}
