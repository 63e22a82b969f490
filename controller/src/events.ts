// Kubernetes Events on owners and on the configuration ConfigMap: what the controller did
// (restarted, healed), and what it will not do and why (rollout stalled, skipped, heal did not
// help, configuration refused). Each is written once per subject, reason and revision in this
// process, so a steady cluster gets no Event writes. An Event is a report: failing to write one
// is logged and never fails the reconcile that decided it.

import type { CoreV1Event } from '@kubernetes/client-node';
import type { KubeApi } from '@outrigger/kube';
import type { Logger } from './log';

export const EVENT_REASONS = [
  'Restarted',
  'Healed',
  'SidecarsShed',
  'RolloutStalled',
  'WaveResumed',
  'RestartSkipped',
  'RestartFailed',
  'HealDidNotHelp',
  'InvalidConfiguration',
  'RolledBack',
  'GateFailed',
  'WaveStopped',
  'WaveStage',
  'WaveComplete',
  'WaveWaiting',
  'ForcedRollback',
  'StuckAfterRollback',
] as const;
export type EventReason = (typeof EVENT_REASONS)[number];

export interface EventSubject {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
}

/** The Event subject of a workload. */
export function workloadSubject(workload: {
  kind: string;
  metadata?: { namespace?: string; name?: string; uid?: string };
}): EventSubject {
  return {
    apiVersion: 'apps/v1',
    kind: workload.kind,
    namespace: workload.metadata?.namespace ?? '',
    name: workload.metadata?.name ?? '',
    uid: workload.metadata?.uid,
  };
}

export interface EventRecord {
  subject: EventSubject;
  type: 'Normal' | 'Warning';
  reason: EventReason;
  message: string;
  /**
   * Same subject, reason and `once`: written once per process. Default: the message. `null` for
   * what happens once by nature (a restart, a resume): written every time, and nothing kept to
   * recognise it by, so a wave of 10,000 restarts leaves no 10,000 keys behind.
   */
  once?: string | null;
}

export interface EventRecorderOptions {
  api: Pick<KubeApi, 'create'>;
  /** Waits for a write token; throws when this replica may no longer write. */
  acquireWrite: () => Promise<void>;
  onWrite: () => void;
  logger: Logger;
  /** Who reports: the replica's identity. */
  instance: string;
  clock?: () => number;
}

const COMPONENT = 'outrigger-controller';
/** Entries remembered before the oldest are forgotten: a bound on memory, not a feature. */
const REMEMBERED = 50_000;
const MESSAGE_LIMIT = 1024;

export class EventRecorder {
  private readonly written = new Set<string>();
  private readonly clock: () => number;

  constructor(private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? Date.now;
  }

  /** How many Events it remembers writing, to write each once. */
  get remembered(): number {
    return this.written.size;
  }

  async record(event: EventRecord): Promise<void> {
    const { subject } = event;
    const id = event.once === null ? undefined : this.idOf(event, event.once ?? event.message);
    if (id !== undefined) {
      if (this.written.has(id)) return;
      this.remember(id);
    }
    try {
      await this.options.acquireWrite();
      this.options.onWrite();
      await this.options.api.create(
        `/api/v1/namespaces/${subject.namespace}/events`,
        this.body(event),
      );
    } catch (error) {
      // Not remembered after all: a later reconcile may try again.
      if (id !== undefined) this.written.delete(id);
      this.options.logger.warn('could not write an Event', {
        reason: event.reason,
        object: `${subject.kind} ${subject.namespace}/${subject.name}`,
        error: (error as Error).message,
      });
    }
  }

  private idOf(event: EventRecord, once: string): string {
    const { subject } = event;
    return [subject.kind, subject.namespace, subject.name, event.reason, once].join('\u0000');
  }

  private remember(id: string): void {
    if (this.written.size >= REMEMBERED) {
      const oldest = this.written.values().next();
      if (!oldest.done) this.written.delete(oldest.value);
    }
    this.written.add(id);
  }

  private body(event: EventRecord): CoreV1Event {
    const { subject } = event;
    const now = new Date(this.clock());
    return {
      metadata: { generateName: `${subject.name}.`, namespace: subject.namespace },
      involvedObject: { ...subject },
      type: event.type,
      reason: event.reason,
      message: event.message.slice(0, MESSAGE_LIMIT),
      source: { component: COMPONENT },
      reportingComponent: COMPONENT,
      reportingInstance: this.options.instance,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }
}
