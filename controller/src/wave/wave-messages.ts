// What a wave step says about the owners it acts on: the reason and message of each restart's
// Event, and which report entries are worth an Event of their own.

import type {
  Config,
  PodDeletion,
  ReportReason,
  RestartOrder,
  WaveReportEntry,
} from '@outrigger/shared';

/** The Event reason of a restart, by its kind. */
export const RESTART_EVENT = {
  rollout: 'Restarted',
  heal: 'Healed',
  shed: 'SidecarsShed',
  rollback: 'RolledBack',
} as const;

/** The Event message of a restart: what it did and why. */
export function restartMessage(order: RestartOrder, detail: string): string {
  const { kind, revision } = order;
  const why = detail ? `: ${detail}` : '';
  switch (kind) {
    case 'rollout':
      return `restarted${order.canary ? ' as a canary' : ''} to roll out configuration revision ${revision}${why}`;
    case 'rollback':
      return `rolled back to configuration revision ${revision}, the last that completed a wave, because the wave to ${order.from ?? 'the new revision'} failed its health gate`;
    case 'heal':
      return `restarted to inject pods that escaped the webhook (revision ${revision})${why}`;
    case 'shed':
      return `restarted to remove the sidecar after the namespace or workload opted out${why}`;
  }
}

const SKIP_REASONS: ReadonlySet<ReportReason> = new Set<ReportReason>([
  'on-delete',
  'auto-restart-disabled',
  'manual-mode',
]);

/** The Event a report entry is worth, if any. Dry-run writes none: it only logs. */
export function reportEvent(
  entry: WaveReportEntry,
  config: Config,
):
  | {
      type: 'Normal' | 'Warning';
      reason: 'RestartSkipped' | 'HealDidNotHelp' | 'StuckAfterRollback';
    }
  | undefined {
  if (config.rollout.mode === 'dry-run') return undefined;
  if (SKIP_REASONS.has(entry.reason)) return { type: 'Normal', reason: 'RestartSkipped' };
  if (entry.reason === 'heal-did-not-help') return { type: 'Warning', reason: 'HealDidNotHelp' };
  // With forceRollback on, the deletion has an Event of its own (FORCED_ROLLBACK_EVENT).
  if (entry.reason === 'forced-rollback' && !config.rollout.forceRollback)
    return { type: 'Warning', reason: 'StuckAfterRollback' };
  return undefined;
}

/** The Event of a pod a forced rollback deleted, on its StatefulSet. */
export const FORCED_ROLLBACK_EVENT = 'ForcedRollback';

export function forcedRollbackMessage(deletion: PodDeletion, to: string): string {
  return `deleted pod ${deletion.pod.name} to finish the rollback: ${deletion.detail}; the StatefulSet recreates it on ${to}`;
}
