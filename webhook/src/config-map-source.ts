// The configuration from a ConfigMap, watched by name and read again on demand; each version
// goes to the store, which keeps the last good one. Loaded only with an API server (cluster.ts).

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeApi } from '@outrigger/kube';
import { configMapText } from '@outrigger/shared';
import type { ConfigSource, ConfigStore } from './config-source';
import type { ObjectRef } from './flags';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import { NamedConfigMap } from './named-config-map';

export class ConfigMapSource implements ConfigSource {
  private readonly configMap: NamedConfigMap;
  private readonly source: string;

  constructor(
    private readonly store: ConfigStore,
    api: KubeApi,
    private readonly ref: ObjectRef,
    deps: { logger: Logger; metrics: WebhookMetrics },
  ) {
    this.source = `configmap ${ref.namespace}/${ref.name}`;
    this.configMap = new NamedConfigMap(api, ref, { ...deps, resource: 'configmaps' }, (cm) =>
      this.take(cm),
    );
  }

  private take(cm: V1ConfigMap | undefined): void {
    const found = configMapText(cm, this.ref);
    if ('text' in found) this.store.offer(found.text, this.source);
    else this.store.unreadable(this.source, found.message);
  }

  start(): Promise<void> {
    return this.configMap.start();
  }

  async refresh(): Promise<void> {
    try {
      await this.configMap.read();
    } catch (err) {
      this.store.unreadable(this.source, (err as Error).message);
    }
  }

  stop(): Promise<void> {
    return this.configMap.stop();
  }
}
