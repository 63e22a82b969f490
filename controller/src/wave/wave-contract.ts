// What a wave step (wave-step.ts) reads, what it is given, and what it carries out of its plan:
// the contract the step and the wave's record on the ConfigMap (wave-record.ts) share.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeApi, ObjectRef } from '@outrigger/kube';
import type { WavePlan, WaveReportEntry, Workload } from '@outrigger/shared';
import type { EventRecorder } from './events';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import type { OwnerBackoff } from './owner-backoff';
import type { AssessedFleet } from './owner-index';

/** What the wave reads: the caches, as they stand. */
export interface WaveView {
  configMap: V1ConfigMap | undefined;
  /** The owners assessed at this time: those that can matter to the plan, and counts of all. */
  assess: (nowMs: number) => AssessedFleet;
  /** An owner's workload by ownerKey, with our own latest write laid over a stale cache. */
  workload: (key: string) => Workload | undefined;
  /** Whether the pods at the current revision are listed, which the health gate waits for. */
  podsSynced: boolean;
}

export interface WaveDeps {
  api: KubeApi;
  configMapRef: ObjectRef;
  systemNamespace: string;
  clock: () => number;
  /** Waits for a write token; throws when this replica may no longer write. */
  acquireWrite: () => Promise<void>;
  onWrite: (resource: string, verb: string) => void;
  /** A workload as our write left it (slim), until the cache has caught up with the write. */
  onWritten: (before: Workload, after: Workload) => void;
  events: EventRecorder;
  /** Dry-run restarts already logged (owner, revision, reason), kept across runs. */
  dryRunReported: Set<string>;
  /** Whether the webhook answers its readiness probe; asked only when a heal is planned. */
  webhookReady: () => Promise<boolean>;
  /** Owners whose last write the API server refused, by ownerKey: kept across steps. */
  failures: Map<string, OwnerBackoff>;
  metrics: ControllerMetrics;
  logger: Logger;
  /**
   * Told after every step whether the health gate is judging any owner: the controller widens
   * its pod watch to the pods at the current revision only while it is.
   */
  onJudging: (judging: boolean) => void;
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
