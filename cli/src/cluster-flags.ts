// The flags every command that talks to a cluster takes, and the kubeconfig rules they follow
// (kube's kubectlAccess): --kubeconfig FILE, else KUBECONFIG, else ~/.kube/config (else
// in-cluster); --context NAME.

import { parseArgs } from 'node:util';
import { CONFIG_MAP_NAME, SYSTEM_NAMESPACE } from '@outrigger/shared';
import {
  KubeApi,
  KubeconfigError,
  kubectlAccess,
  parseRef,
  type ClusterAccess,
  type ObjectRef,
} from '@outrigger/kube';
import { ClusterError, UsageError } from './io';

export const FLEET_FLAGS = `Cluster flags: --kubeconfig FILE, --context NAME, --config-map NAMESPACE/NAME (default ${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME})`;

export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
  /** The configuration ConfigMap; its namespace is Outrigger's. */
  configMap: ObjectRef;
}

/** Parses a cluster command's arguments (every such command takes the same options). */
export function parseClusterArgs(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      namespace: { type: 'string', short: 'n' },
      output: { type: 'string', short: 'o' },
      kubeconfig: { type: 'string' },
      context: { type: 'string' },
      'config-map': { type: 'string' },
      'probe-namespace': { type: 'string' },
      'webhook-configuration': { type: 'string' },
    },
  });
}

/** A bad --config-map is kube's FlagError, which the command reports as a usage error. */
export function clusterFlags(values: {
  kubeconfig?: string;
  context?: string;
  'config-map'?: string;
}): ClusterFlags {
  const configMap = parseRef(
    'config-map',
    values['config-map'] ?? `${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}`,
  );
  return { kubeconfig: values.kubeconfig, context: values.context, configMap };
}

/** The cluster the flags point at: its API, and the server's address for reports. */
export interface Connection {
  api: KubeApi;
  server: string;
}

export function connectCluster(flags: ClusterFlags): Connection {
  const access = clusterAccess(flags);
  return { api: new KubeApi(access), server: access.server };
}

function clusterAccess(flags: ClusterFlags): ClusterAccess {
  try {
    return kubectlAccess({ kubeconfig: flags.kubeconfig, context: flags.context });
  } catch (err) {
    if (err instanceof KubeconfigError && err.problem === 'no-such-context' && flags.context)
      throw new UsageError(
        `--context ${flags.context}: no such context in the kubeconfig (kubectl config get-contexts lists them)`,
      );
    const where = `kubeconfig ${flags.kubeconfig ?? process.env.KUBECONFIG ?? '~/.kube/config'}`;
    const what = err instanceof KubeconfigError ? err.message : `${where}: ${firstLine(err)}`;
    throw new ClusterError(
      `${what}; point --kubeconfig or KUBECONFIG at a working one (kubectl config view checks it)`,
    );
  }
}

/** Not by `instanceof Error`: node's own errors come from another realm under test runners. */
function firstLine(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message;
  return (typeof message === 'string' ? message : String(err)).split('\n')[0] ?? '';
}
