// The environment variables global setup hands to the test files: which cluster to use, whether
// it is the local one, and where this run writes its logs.

/** Set by global setup; read by the test files. */
export const E2E_ENV = {
  /** The kubeconfig (a path, or a KUBECONFIG-style list of paths) every suite uses. */
  kubeconfig: 'OUTRIGGER_E2E_KUBECONFIG',
  /** `local` (the cluster of e2e/cluster) or `external` (any other cluster given by KUBECONFIG). */
  cluster: 'OUTRIGGER_E2E_CLUSTER',
  /** This run's folder for logs, certificates and kubeconfigs (set it to choose the folder). */
  logDir: 'OUTRIGGER_E2E_LOG_DIR',
  /**
   * The local cluster's state directory, when global setup brought it up with up.sh (not when
   * KUBECONFIG was given): global teardown then releases it (see local-cluster.ts).
   */
  localStateDir: 'OUTRIGGER_E2E_LOCAL_STATE_DIR',
  /** `1` when global setup started the local cluster (it was not up before). */
  startedCluster: 'OUTRIGGER_E2E_STARTED_CLUSTER',
  /** Set to 1 to leave a cluster that global setup started running after the run. */
  keepCluster: 'OUTRIGGER_E2E_KEEP_CLUSTER',
  /**
   * The address webhook servers started by tests listen on and the API server calls (default
   * 127.0.0.1). For an API server that is not on this machine's loopback, such as kind's in a
   * container, set it to an address of this machine the API server can reach.
   */
  webhookHost: 'OUTRIGGER_E2E_WEBHOOK_HOST',
} as const;

export type ClusterKind = 'local' | 'external';

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: run the suites through jest -c e2e/jest.config.js (make e2e), ` +
        'whose global setup sets it',
    );
  }
  return value;
}

/** The kubeconfig the suites use (the admin one of the local cluster, or KUBECONFIG). */
export function kubeconfigPath(): string {
  return required(E2E_ENV.kubeconfig);
}

export function clusterKind(): ClusterKind {
  const kind = required(E2E_ENV.cluster);
  if (kind !== 'local' && kind !== 'external') {
    throw new Error(`${E2E_ENV.cluster} must be local or external, not ${kind}`);
  }
  return kind;
}

/** True when the suites run against the local cluster of e2e/cluster. */
export function isLocalCluster(): boolean {
  return clusterKind() === 'local';
}

/** Where webhook servers started by tests listen: OUTRIGGER_E2E_WEBHOOK_HOST, else 127.0.0.1. */
export function webhookHost(): string {
  return process.env[E2E_ENV.webhookHost] || '127.0.0.1';
}
