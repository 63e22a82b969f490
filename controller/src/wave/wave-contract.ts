// What the wave (wave-runner.ts) is built with, what it reads, and what one step carries out of its
// plan: the contract the step, the wave's record on the ConfigMap (wave-record.ts) and the
// forced rollback (forced-rollback.ts) share.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ObjectRef } from '@outrigger/kube';
import type { WavePlan, WaveReportEntry, Workload } from '@outrigger/shared';
import type { ConfigInForce } from '../config/config-map';
import type { EventRecorder } from '../events';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import type { AssessedFleet } from '../watch/owner-index';
import type { WaveWrites, WriteDeps } from './wave-writes';

/** What the wave reads: the caches, as they stand when it asks. */
export interface WaveView {
  /** The configuration ConfigMap, as its watch last saw it. */
  configMap: () => V1ConfigMap | undefined;
  /** The owners assessed for `config` at this time: those that can matter, and counts of all. */
  assess: (config: ConfigInForce, nowMs: number) => AssessedFleet;
  /** An owner's workload by ownerKey, with our own latest write laid over a stale cache. */
  workload: (key: string) => Workload | undefined;
  /** Whether the pods at the current revision are listed, which the health gate waits for. */
  podsSynced: () => boolean;
}

/** What the wave is built with, once: it keeps these for as long as the controller runs. */
export interface WaveDeps extends WriteDeps {
  view: WaveView;
  configMapRef: ObjectRef;
  clock: () => number;
  events: EventRecorder;
  /** Whether the webhook answers its readiness probe; asked only when a heal is planned. */
  webhookReady: () => Promise<boolean>;
  metrics: ControllerMetrics;
  logger: Logger;
  /**
   * Told after every step whether the health gate is judging any owner: the controller widens
   * its pod watch to the pods at the current revision only while it is.
   */
  onJudging: (judging: boolean) => void;
}

/** One step as the record sees it: the revision it plans for, the ConfigMap it read, its writes. */
export interface StepContext {
  config: ConfigInForce;
  configMap: V1ConfigMap | undefined;
  writes: WaveWrites;
}

/**
 * What a wave step carries out of its plan: the writes, and the report entries it logs or turns
 * into Events (dry-run's would-restarts, skips, heals that did not help).
 */
export type ActedOn = Omit<WavePlan, 'report'> & {
  report: WaveReportEntry[];
  /** Some owner waits for a maintenance window. */
  windowClosed: boolean;
  /** The health gate judges some owner. */
  judging: boolean;
};
