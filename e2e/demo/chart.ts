// make demo on the local cluster's real node: Outrigger installed from the chart with helm, its
// image (built from the Dockerfile by make images) run by containerd, and every pod shown with
// its node and its containers' real states; the proxy's own log says which revision it runs.

import type { V1Pod } from '@kubernetes/client-node';
import { SYSTEM_NAMESPACE } from '@outrigger/shared';
import {
  PROXY_CONTAINER,
  createReleaseNamespace,
  helmRelease,
  imageValues,
  type Cluster,
  type InClusterTarget,
} from '../src';
import { say } from './narration';

/** Every wave starts with one canary; the demo soaks it 15 s instead of the default 120 s. */
export const DEMO_VALUES = ['rollout.canary.soakSeconds=15'];

export async function installWithHelm(cluster: Cluster, target: InClusterTarget): Promise<void> {
  await createReleaseNamespace(cluster);
  const sets = [...imageValues(target.image), ...DEMO_VALUES].map((v) => `--set ${v}`).join(' ');
  say(
    `helm install outrigger manifests/chart -n ${SYSTEM_NAMESPACE} ${sets}: the chart's defaults but a short canary soak; the image is the one make images built from the Dockerfile, in the real node's containerd.`,
  );
  await helmRelease('install', SYSTEM_NAMESPACE, target.image, DEMO_VALUES);
  await printPods(cluster, SYSTEM_NAMESPACE);
}

function containerLine(pod: V1Pod): string {
  const statuses = [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
  ];
  return statuses
    .map((s) => {
      const state = s.state?.running
        ? 'running'
        : s.state?.terminated
          ? `exited ${s.state.terminated.exitCode}`
          : (s.state?.waiting?.reason ?? 'waiting');
      return `${s.name} ${state}`;
    })
    .join(', ');
}

/** Each live pod of the namespace: its node, its containers' states as the kubelet reports them. */
export async function printPods(cluster: Cluster, namespace: string): Promise<void> {
  const { items } = await cluster.core.listNamespacedPod({ namespace });
  for (const pod of items.filter((p) => !p.metadata?.deletionTimestamp)) {
    process.stdout.write(
      `  ${namespace}/${pod.metadata?.name} on ${pod.spec?.nodeName ?? '(unscheduled)'}, ${pod.status?.phase}: ${containerLine(pod)}\n`,
    );
  }
}

/** `kubectl logs` of one pod's proxy: the demo proxy says the revision it started with. */
export async function printProxyLog(cluster: Cluster, namespace: string): Promise<void> {
  const { items } = await cluster.core.listNamespacedPod({ namespace });
  const pod = items.find(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      [...(p.spec?.initContainers ?? []), ...(p.spec?.containers ?? [])].some(
        (c) => c.name === PROXY_CONTAINER,
      ),
  );
  const name = pod?.metadata?.name;
  if (!name) return;
  const log = await cluster.core.readNamespacedPodLog({
    name,
    namespace,
    container: PROXY_CONTAINER,
  });
  process.stdout.write(
    `  $ kubectl logs -n ${namespace} ${name} -c ${PROXY_CONTAINER}\n${log
      .trim()
      .split('\n')
      .map((l) => `  ${l}`)
      .join('\n')}\n`,
  );
}
