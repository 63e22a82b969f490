// A refused configuration, reported once per version of its ConfigMap (a resync brings the same
// version back): a metric, an error log line, and, while this replica leads, a Warning Event on
// the ConfigMap that names the problem.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { ObjectRef } from '@outrigger/kube';
import type { ConfigProblem } from '@outrigger/shared';
import type { EventRecorder } from '../events';
import type { Logger } from '../log';
import type { ControllerMetrics } from '../metrics';

export interface ConfigProblemDeps {
  configMap: ObjectRef;
  logger: Logger;
  metrics: ControllerMetrics;
  events: EventRecorder;
  /** Whether this replica leads: only the leader writes the Event. */
  leading: () => boolean;
}

export class ConfigProblems {
  private lastVersion: string | undefined;

  constructor(private readonly deps: ConfigProblemDeps) {}

  /** `cm` (absent: undefined) was refused; the configuration `inForce` stays. */
  report(cm: V1ConfigMap | undefined, problem: ConfigProblem, inForce: string | undefined): void {
    const version = cm?.metadata?.resourceVersion ?? 'absent';
    if (version === this.lastVersion) return;
    this.lastVersion = version;
    const { configMap, logger, metrics } = this.deps;
    metrics.configErrors.inc({ reason: problem.reason });
    logger.error('configuration refused; the last good one stays in force', {
      configMap: `${configMap.namespace}/${configMap.name}`,
      reason: problem.reason,
      error: problem.message,
      revision: inForce ?? null,
    });
    void this.event(cm, problem.message);
  }

  private async event(cm: V1ConfigMap | undefined, message: string): Promise<void> {
    if (!cm || !this.deps.leading()) return;
    const { namespace, name } = this.deps.configMap;
    await this.deps.events.record({
      subject: { apiVersion: 'v1', kind: 'ConfigMap', namespace, name, uid: cm.metadata?.uid },
      type: 'Warning',
      reason: 'InvalidConfiguration',
      message,
      once: cm.metadata?.resourceVersion ?? message,
    });
  }
}
