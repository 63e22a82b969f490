// What the wave planner can decide for an owner, and why: closed lists shared by the planner
// (wave.ts), each owner's verdict (wave-verdict.ts), and the metrics, Events, logs and `outrigger
// status` that report them.

/** What a wave does with an owner now. */
export const ACTIONS = ['none', 'follow', 'restart', 'wait', 'skip', 'stop'] as const;
export type Action = (typeof ACTIONS)[number];

/** Why an owner got its action; a closed set for metrics, Events, logs and `outrigger status`. */
export const REPORT_REASONS = [
  'current',
  'not-enabled',
  'following',
  'rollout-in-progress',
  'rollout-stalled',
  'deadline-exceeded',
  'stall-acknowledged',
  'on-delete',
  'auto-restart-disabled',
  'already-restarted',
  'outdated',
  'shed-sidecars',
  'escaped',
  'heal-disabled',
  'heal-did-not-help',
  'heal-backoff',
  'webhook-unavailable',
  'wave-stopped',
  'budget',
  'manual-mode',
  'canary-stage',
  'window-closed',
  'proxy-failing',
  'rollback',
  'forced-rollback',
  'write-refused',
] as const;
export type ReportReason = (typeof REPORT_REASONS)[number];
