// What the wave (wave-runner.ts) is built with, what it reads, and what one step carries out of its
// plan: the contract the step, the wave's record on the ConfigMap (wave-record.ts) and the
// forced rollback (forced-rollback.ts) share.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ObjectRef } from '@outrigger/kube';
import type {
  AppliedSet,
  Config,
  RestartOrder,
  WaveKeys,
  WavePlan,
  WaveReportEntry,
  Workload,
} from '@outrigger/shared';
import type { ConfigInForce } from '../config/config-map';
import type { EventRecorder } from '../events';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';
import type { AssessedFleet } from '../watch/owner-index';
import type { FleetOwners } from '@outrigger/shared';
import type { WaveWrites, WriteDeps } from './wave-writes';

/** What the wave reads: the caches, as they stand when it asks. */
export interface WaveView {
  /** The configuration ConfigMap, as its watch last saw it. */
  configMap: () => V1ConfigMap | undefined;
  /** The owners assessed for `config` at this time: those that can matter, and counts of all. */
  assess: (config: ConfigInForce, nowMs: number) => AssessedFleet;
  /** The owners assessed for one sidecar set's wave: those that can matter. */
  assessSet: (config: ConfigInForce, set: AppliedSet, nowMs: number) => FleetOwners;
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

/**
 * One step as the record sees it: the configuration it plans for, the ConfigMap as it read it
 * (or as its own last write left it: each wave's record is written in turn), its writes.
 */
export interface StepContext {
  config: ConfigInForce;
  configMap: V1ConfigMap | undefined;
  writes: WaveWrites;
}

/**
 * Which wave: the proxy's, or a sidecar set's (docs/controller.md, "Sidecar sets"). Each has its
 * names (its stamp, records and wave record), its revision and its rollout settings.
 */
export interface WaveOf {
  keys: WaveKeys;
  revision: string;
  /** The configuration in force with this wave's rollout settings. */
  config: Config;
  /** The set, for a set's wave. */
  set?: AppliedSet;
  /** How messages name its revision: `revision X`, or `set logs revision X`. */
  title: string;
}

/** A restart a set waiting only for its budget joins, as another set restarts the owner anyway. */
export type Joinable = RestartOrder;

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
  /** Restarts held by the budget alone: they join a restart another wave makes of the owner. */
  joinable: Joinable[];
  /** Owners in this set's scope whose template lacks its stamp (current revision: they get it anyway). */
  unstamped: ReadonlySet<string>;
};
