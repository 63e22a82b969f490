// What the webhook reads from the API server: its version, the namespaces, and the sources of
// the configuration, its history and the certificate. main.ts loads this module only when there
// is an API server; standalone, with files, it is never loaded.

import type { V1Namespace } from '@kubernetes/client-node';
import { KubeApi, ResilientWatch, loadClusterAccess } from '@outrigger/kube';
import { namespaceMeta, type NamespaceMeta } from '@outrigger/shared';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';

/** The API of the kubeconfig file, or of the pod we run in. */
export const connectApi = (kubeconfig: string | undefined): KubeApi =>
  new KubeApi(loadClusterAccess(kubeconfig));
export { ConfigMapSource } from './config-map-source';
export { HistorySource } from './history-source';
export { SecretTlsSource } from './secret-tls-source';

/** Whether the API server runs native sidecars (Kubernetes 1.29 and newer). */
export async function clusterSupportsNativeSidecars(api: KubeApi): Promise<boolean> {
  const info = await api.get<{ major: string; minor: string }>('/version');
  const major = Number(info.major);
  const minor = Number.parseInt(info.minor, 10);
  return major > 1 || (major === 1 && minor >= 29);
}

/** Every namespace's metadata, handed to `onChange` whole after each list and change. */
export function namespaceWatch(
  api: KubeApi,
  deps: { logger: Logger; metrics: WebhookMetrics },
  onChange: (m: Map<string, NamespaceMeta>) => void,
): ResilientWatch<V1Namespace> {
  return new ResilientWatch<V1Namespace>({
    api,
    path: '/api/v1/namespaces',
    onChange: (items) =>
      onChange(new Map(items.map((ns) => [ns.metadata?.name ?? '', namespaceMeta(ns)]))),
    onRestart: (reason) => deps.metrics.watchRestarts.inc({ resource: 'namespaces', reason }),
    logger: deps.logger,
    resource: 'namespaces',
    resyncMs: 10 * 60_000,
  });
}
