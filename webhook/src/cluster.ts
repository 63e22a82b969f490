// What the webhook reads from the API server: its version, the namespaces, and the sources of
// the configuration, its history and the certificate. main.ts loads this module (and with it the
// Kubernetes client, about 60 MiB resident) only when there is an API server; standalone, with
// files, it is never loaded.

import { CoreV1Api, VersionApi, type KubeConfig, type V1Namespace } from '@kubernetes/client-node';
import { ResilientWatch } from '@outrigger/kube';
import type { NamespaceMeta } from '@outrigger/shared';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';

export { loadKubeConfig } from '@outrigger/kube';
export { ConfigMapSource } from './config-map-source';
export { HistorySource } from './history-source';
export { SecretTlsSource } from './secret-tls-source';

/** Whether the API server runs native sidecars (Kubernetes 1.29 and newer). */
export async function clusterSupportsNativeSidecars(kc: KubeConfig): Promise<boolean> {
  const info = await kc.makeApiClient(VersionApi).getCode();
  const major = Number(info.major);
  const minor = Number.parseInt(info.minor, 10);
  return major > 1 || (major === 1 && minor >= 29);
}

function namespaceMeta(ns: V1Namespace): NamespaceMeta {
  return {
    name: ns.metadata?.name ?? '',
    labels: ns.metadata?.labels ?? {},
    annotations: ns.metadata?.annotations ?? {},
  };
}

/** Every namespace's metadata, handed to `onChange` whole after each list and change. */
export function namespaceWatch(
  kc: KubeConfig,
  deps: { logger: Logger; metrics: WebhookMetrics },
  onChange: (m: Map<string, NamespaceMeta>) => void,
): ResilientWatch<V1Namespace> {
  return new ResilientWatch<V1Namespace>({
    kc,
    path: '/api/v1/namespaces',
    list: () => kc.makeApiClient(CoreV1Api).listNamespace(),
    onChange: (items) =>
      onChange(new Map(items.map((ns) => [ns.metadata?.name ?? '', namespaceMeta(ns)]))),
    onRestart: (reason) => deps.metrics.watchRestarts.inc({ resource: 'namespaces', reason }),
    logger: deps.logger,
    resource: 'namespaces',
    resyncMs: 10 * 60_000,
  });
}
