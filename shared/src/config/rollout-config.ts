// How a wave rolls a revision out: the `rollout` section of the configuration, and the part of it
// a sidecar set may set for itself (its own mode, budget, canaries, gate, rollback and windows).

import { labelSelector, type LabelSelector } from '../kubernetes/selector';
import { maintenanceWindow, type MaintenanceWindow } from '../rollout/windows';
import { bool, int, list, oneOf, struct, type Field } from './schema';

export const ROLLOUT_MODES = ['auto', 'manual', 'dry-run'] as const;
export const FAILURE_ACTIONS = ['rollback', 'stop'] as const;
export type RolloutMode = (typeof ROLLOUT_MODES)[number];
export type FailureAction = (typeof FAILURE_ACTIONS)[number];

/** The first owners a wave restarts, and how long they must stay healthy before the rest. */
export interface CanaryConfig {
  /** How many owners the canary stage restarts; 0 skips the stage. */
  count: number;
  /** Only owners in namespaces whose labels match are canaries. */
  namespaceSelector?: LabelSelector;
  /** Only owners (Deployments, StatefulSets, DaemonSets) whose own labels match are canaries. */
  ownerSelector?: LabelSelector;
  /** How long every canary owner must pass the health gate before the rest of the wave starts. */
  soakSeconds: number;
}

export interface RolloutConfig {
  mode: RolloutMode;
  maxConcurrent: number;
  progressDeadlineSeconds: number;
  restartOnOptOut: boolean;
  healEscapedPods: boolean;
  healBackoffSeconds: number;
  /** What a failed health gate does beyond stopping the wave. */
  onFailure: FailureAction;
  /**
   * After a rollback, delete a StatefulSet's pods left not Ready on the failed revision, which
   * its controller (OrderedReady) never replaces by itself; off, an Event names them instead.
   */
  forceRollback: boolean;
  canary: CanaryConfig;
  /** How many accepted configurations the revision history keeps, the current one included. */
  history: number;
  /** When restarts of a wave may start; empty: at any time. */
  windows: MaintenanceWindow[];
}

/** The most revisions the history may keep; see revision-history.ts for what fits in one object. */
export const MAX_HISTORY = 50;

const canarySchema = struct<CanaryConfig>({
  count: { read: int(0, 1000), default: 1 },
  namespaceSelector: { read: labelSelector },
  ownerSelector: { read: labelSelector },
  soakSeconds: { read: int(0, 86400), default: 120 },
});

export const rolloutSchema = struct<RolloutConfig>({
  mode: { read: oneOf(ROLLOUT_MODES), default: 'auto' },
  maxConcurrent: { read: int(1, 1000), default: 5 },
  progressDeadlineSeconds: { read: int(10, 86400), default: 600 },
  restartOnOptOut: { read: bool, default: false },
  healEscapedPods: { read: bool, default: true },
  healBackoffSeconds: { read: int(1, 86400), default: 300 },
  onFailure: { read: oneOf(FAILURE_ACTIONS), default: 'rollback' },
  forceRollback: { read: bool, default: true },
  canary: { read: canarySchema, section: true },
  history: { read: int(2, MAX_HISTORY), default: 10 },
  windows: { read: list(maintenanceWindow), default: [] },
});

/**
 * What a sidecar set may set of its own rollout; each key left out is the configuration's
 * `rollout`. Heals are the proxy's (a heal re-injects every set), and the history is one for all.
 */
export type SetRolloutConfig = Partial<
  Pick<
    RolloutConfig,
    | 'mode'
    | 'maxConcurrent'
    | 'progressDeadlineSeconds'
    | 'restartOnOptOut'
    | 'onFailure'
    | 'forceRollback'
    | 'canary'
    | 'windows'
  >
>;

export const setRolloutSchema: Field<SetRolloutConfig> = struct<SetRolloutConfig>({
  mode: { read: oneOf(ROLLOUT_MODES) },
  maxConcurrent: { read: int(1, 1000) },
  progressDeadlineSeconds: { read: int(10, 86400) },
  restartOnOptOut: { read: bool },
  onFailure: { read: oneOf(FAILURE_ACTIONS) },
  forceRollback: { read: bool },
  canary: { read: canarySchema },
  windows: { read: list(maintenanceWindow) },
});

/** A set's rollout: its own settings over the configuration's. */
export function effectiveRollout(
  base: RolloutConfig,
  own: SetRolloutConfig | undefined,
): RolloutConfig {
  if (!own) return base;
  const set = Object.fromEntries(Object.entries(own).filter(([, v]) => v !== undefined));
  return { ...base, ...set };
}
