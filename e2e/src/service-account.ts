// Running as a ServiceAccount: create one, give it a Role, get a token from the TokenRequest API
// and write a kubeconfig with it, so a client or a process has only that account's RBAC.

import { writeFile } from 'node:fs/promises';
import {
  type KubeConfig,
  type KubernetesObject,
  type V1PolicyRule,
  type V1Role,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { apply } from './apply';
import { PooledKubeConfig, type Cluster } from './cluster';
import { freshPath, logDir } from './log-dir';

export interface ServiceAccountRef {
  namespace: string;
  name: string;
}

export interface TokenOptions {
  /** Token lifetime (default 3600; the API server's minimum is 600). */
  expirationSeconds?: number;
  /** Default: the API server's own audiences. */
  audiences?: string[];
}

export interface RoleOptions {
  /** Name of the Role and RoleBinding (default: the ServiceAccount's name). */
  name?: string;
  rules: V1PolicyRule[];
  /**
   * A ClusterRole and ClusterRoleBinding instead (named <namespace>-<name>). They outlive the
   * namespace: delete them with remove() and the objects this returns.
   */
  clusterWide?: boolean;
}

export interface ServiceAccountKubeConfig {
  /** The kubeconfig file (mode 0600, in the run's log folder, under kubeconfigs/). */
  path: string;
  kubeConfig: PooledKubeConfig;
  token: string;
}

/** Creates (or keeps) a ServiceAccount. */
export async function createServiceAccount(
  cluster: Cluster,
  account: ServiceAccountRef,
): Promise<void> {
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: account.name, namespace: account.namespace },
  });
}

/** Binds the ServiceAccount to a new Role (or ClusterRole) with `rules`; returns both objects. */
export async function grantRole(
  cluster: Cluster,
  account: ServiceAccountRef,
  options: RoleOptions,
): Promise<KubernetesObject[]> {
  const base = options.name ?? account.name;
  const clusterWide = options.clusterWide ?? false;
  const name = clusterWide ? `${account.namespace}-${base}` : base;
  const metadata = clusterWide ? { name } : { name, namespace: account.namespace };
  const roleKind = clusterWide ? 'ClusterRole' : 'Role';
  const role: V1Role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: roleKind,
    metadata,
    rules: options.rules,
  };
  const binding: V1RoleBinding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: clusterWide ? 'ClusterRoleBinding' : 'RoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: roleKind, name },
    subjects: [{ kind: 'ServiceAccount', name: account.name, namespace: account.namespace }],
  };
  return apply(cluster, [role, binding]);
}

/** A token for the ServiceAccount from the TokenRequest API. */
export async function requestToken(
  cluster: Cluster,
  account: ServiceAccountRef,
  options: TokenOptions = {},
): Promise<string> {
  const response = await cluster.core.createNamespacedServiceAccountToken({
    name: account.name,
    namespace: account.namespace,
    body: {
      spec: {
        expirationSeconds: options.expirationSeconds ?? 3600,
        audiences: options.audiences ?? [],
      },
    },
  });
  const token = response.status?.token;
  if (!token) {
    throw new Error(
      `TokenRequest for ServiceAccount ${account.namespace}/${account.name} returned no token`,
    );
  }
  return token;
}

/** A kubeconfig for `base`'s current cluster that authenticates with `token`. */
export function kubeConfigWithToken(
  base: KubeConfig,
  account: ServiceAccountRef,
  token: string,
): PooledKubeConfig {
  const server = base.getCurrentCluster();
  if (!server) throw new Error('the kubeconfig has no current cluster');
  const user = `system:serviceaccount:${account.namespace}:${account.name}`;
  const context = `${account.name}@${account.namespace}`;
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ ...server, name: 'cluster' }],
    users: [{ name: user, token }],
    contexts: [{ name: context, cluster: 'cluster', user, namespace: account.namespace }],
    currentContext: context,
  });
  return kubeConfig;
}

/**
 * Requests a token for the ServiceAccount and writes a kubeconfig with it (the same as
 * e2e/cluster/sa-kubeconfig.sh), for clients in the test and for processes it starts.
 */
export async function writeServiceAccountKubeConfig(
  cluster: Cluster,
  account: ServiceAccountRef,
  options: TokenOptions = {},
): Promise<ServiceAccountKubeConfig> {
  const token = await requestToken(cluster, account, options);
  const kubeConfig = kubeConfigWithToken(cluster.kubeConfig, account, token);
  const path = freshPath(
    logDir('kubeconfigs'),
    `${account.namespace}-${account.name}`,
    '.kubeconfig',
  );
  await writeFile(path, kubeConfig.exportConfig(), { mode: 0o600 });
  return { path, kubeConfig, token };
}
