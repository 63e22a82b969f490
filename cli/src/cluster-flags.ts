// The flags every command that talks to a cluster takes, and the kubeconfig rules they follow:
// --kubeconfig FILE, else KUBECONFIG, else ~/.kube/config (else in-cluster); --context NAME.

import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { CONFIG_MAP_NAME, SYSTEM_NAMESPACE } from '@outrigger/shared';
import { ClusterError, UsageError } from './io';

export const FLEET_FLAGS = `Cluster flags: --kubeconfig FILE, --context NAME, --config-map NAMESPACE/NAME (default ${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME})`;

export interface ClusterFlags {
  kubeconfig?: string;
  context?: string;
  /** The configuration ConfigMap; its namespace is Outrigger's. */
  configMap: { namespace: string; name: string };
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

export function clusterFlags(values: {
  kubeconfig?: string;
  context?: string;
  'config-map'?: string;
}): ClusterFlags {
  const ref = values['config-map'] ?? `${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}`;
  const [namespace = '', name = '', ...rest] = ref.split('/');
  if (!namespace || !name || rest.length > 0)
    throw new UsageError(
      `--config-map must be NAMESPACE/NAME, such as ${SYSTEM_NAMESPACE}/${CONFIG_MAP_NAME}; got ${ref}`,
    );
  return { kubeconfig: values.kubeconfig, context: values.context, configMap: { namespace, name } };
}

export function loadKubeConfig(flags: ClusterFlags): KubeConfig {
  const kc = new KubeConfig();
  const where = `kubeconfig ${flags.kubeconfig ?? process.env.KUBECONFIG ?? '~/.kube/config'}`;
  const fix = 'point --kubeconfig or KUBECONFIG at a working one (kubectl config view checks it)';
  try {
    if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new ClusterError(`${where}: ${firstLine(err)}; ${fix}`);
  }
  if (flags.context) {
    if (!kc.getContextObject(flags.context))
      throw new UsageError(
        `--context ${flags.context}: no such context in the kubeconfig (kubectl config get-contexts lists them)`,
      );
    kc.setCurrentContext(flags.context);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ClusterError(`${where}: no current cluster; ${fix}`);
  if (!cluster.server)
    throw new ClusterError(`${where}: cluster ${cluster.name} has no server; ${fix}`);
  return kc;
}

const firstLine = (err: unknown): string =>
  (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
