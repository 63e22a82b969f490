// One ConfigMap, watched by name (RBAC grants it by name, and a watch with fieldSelector
// metadata.name is authorized by it) and read again on demand. Both the configuration and the
// revision history come to the webhook this way.

import type { V1ConfigMap } from '@kubernetes/client-node';
import { ResilientWatch, type KubeApi } from '@outrigger/kube';
import type { ObjectRef } from './flags';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';

export class NamedConfigMap {
  private readonly watch: ResilientWatch<V1ConfigMap>;

  constructor(
    private readonly api: KubeApi,
    private readonly ref: ObjectRef,
    deps: { logger: Logger; metrics: WebhookMetrics; resource: string },
    /** The ConfigMap as it now stands, or undefined when it does not exist. */
    private readonly take: (cm: V1ConfigMap | undefined) => void,
  ) {
    this.watch = new ResilientWatch<V1ConfigMap>({
      api,
      path: `/api/v1/namespaces/${ref.namespace}/configmaps`,
      fieldSelector: `metadata.name=${ref.name}`,
      onChange: (items) => take(items[0]),
      onRestart: (reason) => deps.metrics.watchRestarts.inc({ resource: deps.resource, reason }),
      logger: deps.logger,
      resource: `configmap ${ref.namespace}/${ref.name}`,
      resyncMs: 5 * 60_000,
    });
  }

  /** Resolves after the first list. */
  start(): Promise<void> {
    return this.watch.start();
  }

  /** Reads it now; throws what the API server answered. */
  async read(): Promise<void> {
    this.take(
      await this.api.get<V1ConfigMap>(
        `/api/v1/namespaces/${this.ref.namespace}/configmaps/${this.ref.name}`,
      ),
    );
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }
}
