// The serving certificate from a Secret (keys tls.crt and tls.key), watched by name; each new
// pair goes to the store. Loaded only with an API server (cluster.ts).

import type { V1Secret } from '@kubernetes/client-node';
import { ResilientWatch, type KubeApi } from '@outrigger/kube';
import type { ObjectRef } from './flags';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import type { TlsSource, TlsStore } from './tls';

export class SecretTlsSource implements TlsSource {
  private readonly watch: ResilientWatch<V1Secret>;

  constructor(
    store: TlsStore,
    api: KubeApi,
    ref: ObjectRef,
    deps: { logger: Logger; metrics: WebhookMetrics },
  ) {
    const source = `secret ${ref.namespace}/${ref.name}`;
    const decode = (v: string | undefined): string =>
      Buffer.from(v ?? '', 'base64').toString('utf8');
    this.watch = new ResilientWatch<V1Secret>({
      api,
      path: `/api/v1/namespaces/${ref.namespace}/secrets`,
      fieldSelector: `metadata.name=${ref.name}`,
      onChange: (items) => {
        const data = items[0]?.data;
        if (!data?.['tls.crt'] || !data['tls.key']) {
          deps.logger.warn('serving certificate not in the Secret yet', { source });
          return;
        }
        store.offer({ cert: decode(data['tls.crt']), key: decode(data['tls.key']) }, source);
      },
      onRestart: (reason) => deps.metrics.watchRestarts.inc({ resource: 'secrets', reason }),
      logger: deps.logger,
      resource: source,
      resyncMs: 5 * 60_000,
    });
  }

  start(): Promise<void> {
    return this.watch.start();
  }

  stop(): Promise<void> {
    return this.watch.stop();
  }
}
