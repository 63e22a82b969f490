// The revision history the controller keeps (`<config-map>-history`, one key per revision), as
// the webhook holds it: the injection part of every accepted configuration a pod may still be
// pinned to. Watched like the configuration; an entry that does not read back as what its key
// says is left out with a log line, so a hand edit cannot put another proxy under a revision.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeApi } from '@outrigger/kube';
import {
  readHistory,
  readSetHistory,
  type HeldSets,
  type RevisionContent,
  heldBySet,
} from '@outrigger/shared';
import type { ObjectRef } from './flags';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import { NamedConfigMap } from './named-config-map';

/** How long start-up waits for the history before serving without it. */
export const HISTORY_WAIT_MS = 5000;

export class HistorySource {
  private held: ReadonlyMap<string, RevisionContent> = new Map();
  private heldSets: HeldSets = new Map();
  private readonly configMap: NamedConfigMap;
  private readonly reported = new Set<string>();

  constructor(
    api: KubeApi,
    private readonly ref: ObjectRef,
    private readonly deps: { logger: Logger; metrics: WebhookMetrics },
    private readonly onChange: () => void,
  ) {
    const resource = 'configmaps (history)';
    this.configMap = new NamedConfigMap(api, ref, { ...deps, resource }, (cm) => this.take(cm));
  }

  /** The injection part of each revision held, by revision. */
  get contents(): ReadonlyMap<string, RevisionContent> {
    return this.held;
  }

  /** Each sidecar set's revisions held, by set and revision. */
  get setContents(): HeldSets {
    return this.heldSets;
  }

  private take(cm: V1ConfigMap | undefined): void {
    const history = readHistory(cm?.data);
    const sets = readSetHistory(cm?.data);
    for (const problem of [...history.problems, ...sets.problems]) {
      if (this.reported.has(problem)) continue;
      this.reported.add(problem);
      this.deps.logger.warn('revision history entry left out', {
        configMap: `${this.ref.namespace}/${this.ref.name}`,
        problem,
      });
    }
    this.held = new Map(history.entries.map((e) => [e.revision, e.content]));
    this.heldSets = heldBySet(sets.entries);
    this.onChange();
  }

  /**
   * Resolves after the first list, so a pinned pod is not admitted before the history is in; or
   * after `waitMs`, with an error log, when the history cannot be listed (RBAC made by hand
   * without it, say): the webhook then serves, pinned pods get the current revision, and the
   * watch goes on trying. A webhook that never became ready would be the worse outage.
   */
  async start(waitMs = HISTORY_WAIT_MS): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), waitMs);
    });
    const first = await Promise.race([this.configMap.start(), late]);
    clearTimeout(timer);
    if (first !== 'late') return;
    const { namespace, name } = this.ref;
    this.deps.logger.error(
      'the revision history is not readable; serving without it until it is: pods pinned to an earlier revision get the current one',
      {
        configMap: `${namespace}/${name}`,
        fix: `grant the webhook's ServiceAccount get, list and watch on ConfigMap ${namespace}/${name} (the chart's Role does)`,
      },
    );
  }

  async refresh(): Promise<void> {
    try {
      await this.configMap.read();
    } catch (err) {
      // Not there yet (the controller writes it) or unreachable: keep what is held.
      this.deps.logger.debug('revision history not read', { error: (err as Error).message });
    }
  }

  stop(): Promise<void> {
    return this.configMap.stop();
  }
}
