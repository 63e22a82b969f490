// Workloads the suites create: small, never pulled on the local cluster (kwok runs no
// containers), and real elsewhere.

export const PAUSE_IMAGE = 'registry.k8s.io/pause:3.10';

export interface DeploymentOptions {
  replicas?: number;
  /** Template labels beyond `app: <name>`. */
  labels?: Record<string, string>;
  /** More fields of the Deployment's spec, such as strategy or progressDeadlineSeconds. */
  spec?: Record<string, unknown>;
  /** Labels of the Deployment itself (what rollout.canary.ownerSelector matches). */
  ownerLabels?: Record<string, string>;
  /** Template annotations (an opt-out, say). */
  templateAnnotations?: Record<string, string>;
}

/** A Deployment `name` (pods labelled app=<name>, one container named like it) as YAML. */
export function deploymentYaml(name: string, options: DeploymentOptions = {}): string {
  const extra = Object.entries(options.spec ?? {}).map(
    ([k, v]) => `  ${k}: ${JSON.stringify(v)}\n`,
  );
  return `
apiVersion: apps/v1
kind: Deployment
metadata: {name: ${name}, labels: ${JSON.stringify(options.ownerLabels ?? {})}}
spec:
  replicas: ${options.replicas ?? 1}
  selector: {matchLabels: {app: ${name}}}
  template:
    metadata:
      labels: ${JSON.stringify({ app: name, ...options.labels })}${options.templateAnnotations ? `\n      annotations: ${JSON.stringify(options.templateAnnotations)}` : ''}
    spec: {containers: [{name: ${name}, image: ${PAUSE_IMAGE}}]}
${extra.join('')}`;
}

/**
 * One of each kind Outrigger rolls: Deployment `web`, StatefulSet `db` (2 replicas, with its
 * headless Service) and DaemonSet `agent` (every schedulable node).
 */
export function threeKindsYaml(webReplicas: number, minReadySeconds = 0): string {
  // minReadySeconds makes every rollout take visibly long (make demo shows a wave).
  const ready = minReadySeconds > 0 ? `\n  minReadySeconds: ${minReadySeconds}` : '';
  return `${deploymentYaml('web', { replicas: webReplicas, spec: minReadySeconds > 0 ? { minReadySeconds } : {} })}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2${ready}
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: ${PAUSE_IMAGE}}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:${ready}
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: ${PAUSE_IMAGE}}]}
`;
}
