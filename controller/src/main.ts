// outrigger-controller: wires flags, the namespace watch, leader election, the work queue and the
// metrics server; on SIGTERM it releases the Lease (so a follower takes over at once) and stops.

import type { Server as HttpServer } from 'node:http';
import { CoreV1Api, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import {
  LeaderElector,
  ResilientWatch,
  boundPort,
  loadKubeConfig,
  startProbeServer,
} from '@outrigger/kube';
import { Controller } from './controller';
import { FlagError, USAGE, parseFlags, type ControllerFlags } from './flags';
import { createLogger, type Logger } from './log';
import { ControllerMetrics } from './metrics';

export interface Running {
  metricsPort: number;
  ready: () => boolean;
  shutdown: () => Promise<void>;
}

export interface ControllerDeps {
  logger: Logger;
  metrics: ControllerMetrics;
}

function namespaceWatch(
  kc: KubeConfig,
  deps: ControllerDeps,
  controller: Controller,
): ResilientWatch<V1Namespace> {
  return new ResilientWatch<V1Namespace>({
    kc,
    path: '/api/v1/namespaces',
    list: () => kc.makeApiClient(CoreV1Api).listNamespace(),
    onChange: (items) => controller.onNamespaces(items),
    onRestart: () => deps.metrics.watchRestarts.inc({ resource: 'namespaces' }),
    logger: deps.logger,
    resource: 'namespaces',
    resyncMs: 10 * 60_000,
  });
}

function elector(kc: KubeConfig, flags: ControllerFlags, deps: ControllerDeps, c: Controller) {
  return new LeaderElector({
    kc,
    namespace: flags.namespace,
    name: flags.leaseName,
    onStartedLeading: () => c.startLeading(),
    onStoppedLeading: () => void c.stopLeading(),
    logger: deps.logger,
  });
}

export async function startController(
  flags: ControllerFlags,
  deps: ControllerDeps,
): Promise<Running> {
  const { logger, metrics } = deps;
  const kc = loadKubeConfig(flags.kubeconfig);
  const controller = new Controller({
    kc,
    policy: { systemNamespace: flags.namespace },
    logger,
    metrics,
  });
  const watch = namespaceWatch(kc, deps, controller);
  let stopping = false;
  const ready = (): boolean => !stopping && watch.hasSynced;
  const http: HttpServer = await startProbeServer(
    metrics.registry,
    { live: () => true, ready },
    flags.metricsListen,
  );
  await watch.start();
  const leader = flags.leaderElect ? elector(kc, flags, deps, controller) : undefined;
  if (leader) leader.start();
  else controller.startLeading();
  logger.info('outrigger-controller running', {
    metrics: boundPort(http),
    namespace: flags.namespace,
    leaderElect: flags.leaderElect,
    lease: flags.leaderElect ? `${flags.namespace}/${flags.leaseName}` : null,
  });

  const shutdown = async (): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await leader?.stop();
    await controller.stopLeading();
    await watch.stop();
    await new Promise((r) => http.close(r));
    logger.info('stopped');
  };
  return { metricsPort: boundPort(http), ready, shutdown };
}

export async function main(argv: string[]): Promise<number> {
  let flags: ControllerFlags;
  try {
    flags = parseFlags(argv, process.env);
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    const usage = err.message.includes('Usage') ? '' : `\n${USAGE}\n`;
    process.stderr.write(`outrigger-controller: ${err.message}\n${usage}`);
    return 2;
  }
  const logger = createLogger(flags.logLevel);
  const metrics = new ControllerMetrics(undefined, true);
  let running: Running;
  try {
    running = await startController(flags, { logger, metrics });
  } catch (err) {
    logger.error('outrigger-controller could not start', { error: (err as Error).message });
    return 1;
  }
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info('signal received', { signal });
      void running.shutdown().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return 0;
}
