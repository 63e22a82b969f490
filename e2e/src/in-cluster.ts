// The in-cluster suites' target: Outrigger installed from the unchanged chart, its image run by
// a node that runs containers, with the demo proxy as the injected sidecar. On the local cluster
// that node is e2e/cluster's real node (node.sh) and the images come from `make images`; on any
// other cluster (KUBECONFIG) the images are named by OUTRIGGER_E2E_IMAGE and
// OUTRIGGER_E2E_PROXY_IMAGE and must already be pullable there (kind: `kind load`).

import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import type { Cluster } from './cluster';
import { CHART_DIR, helm } from './helm';
import { deleteNamespace } from './namespace';
import { isLocalCluster } from './environment';
import { clusterScriptsDir, outriggerCacheDir } from './paths';
import { LEASE_NAME, SYSTEM_NAMESPACE } from '@outrigger/shared';

const run = promisify(execFile);

/** The local real node's label and taint (e2e/cluster/node.sh). */
export const REAL_NODE_SELECTOR = 'outrigger.dev/node=real';
export const REAL_NODE_TAINT_KEY = 'outrigger.dev/real-node';

/** Env naming the images on a cluster other than the local one. */
export const IN_CLUSTER_ENV = {
  image: 'OUTRIGGER_E2E_IMAGE',
  proxyImage: 'OUTRIGGER_E2E_PROXY_IMAGE',
  shipperImage: 'OUTRIGGER_E2E_SHIPPER_IMAGE',
  shipperImageNext: 'OUTRIGGER_E2E_SHIPPER_IMAGE_NEXT',
} as const;

/**
 * The annotations that put every pod of a namespace on the local cluster's real node (the API
 * server's PodTolerationRestriction and PodNodeSelector plugins add the toleration and the node
 * selector); none elsewhere, where every node is real.
 */
export function realNodeNamespaceAnnotations(): Record<string, string> {
  if (!isLocalCluster()) return {};
  return {
    'scheduler.alpha.kubernetes.io/defaultTolerations': JSON.stringify([
      { key: REAL_NODE_TAINT_KEY, operator: 'Exists', effect: 'NoSchedule' },
    ]),
    'scheduler.alpha.kubernetes.io/node-selector': REAL_NODE_SELECTOR,
  };
}

export interface ImageReference {
  /** The whole reference, repository:tag. */
  reference: string;
  repository: string;
  tag: string;
}

export function splitReference(reference: string): ImageReference {
  const colon = reference.lastIndexOf(':');
  if (colon <= reference.lastIndexOf('/'))
    return { reference, repository: reference, tag: 'latest' };
  return { reference, repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
}

export interface InClusterTarget {
  /** Outrigger's image, as the chart's image.repository and image.tag. */
  image: ImageReference;
  /** The demo proxy's image: the sidecar the tests inject. */
  proxyImage: string;
  /**
   * The chart values that make the configuration inject the demo proxy: none on the local
   * cluster, whose node knows it by the default proxy and proxy-init images' names.
   */
  proxyValues: string[];
  /** The log shipper's image, a second sidecar set's (e2e/log-shipper); absent: none here. */
  shipperImage?: string;
  /** The same shipper under another name, for a change of the set's image alone. */
  shipperImageNext?: string;
}

/** The log shipper's second name on the local cluster's node (e2e/cluster/node.sh tags it). */
export const SHIPPER_NEXT_IMAGE = 'localhost/outrigger/log-shipper:1.1';

/**
 * The images `make images` built, by name (the reference's last path element: outrigger,
 * demo-proxy, pause), from the index e2e/cluster/images.sh writes: "<archive> <reference>".
 */
export function builtImages(): Map<string, { archive: string; reference: string }> {
  const dir = path.join(outriggerCacheDir(), 'images');
  const index = path.join(dir, 'index');
  const images = new Map<string, { archive: string; reference: string }>();
  if (!existsSync(index)) return images;
  for (const line of readFileSync(index, 'utf8').split('\n')) {
    const [archive, reference] = line.trim().split(/\s+/);
    if (!archive || !reference || archive.startsWith('#')) continue;
    const name = splitReference(reference).repository.split('/').pop() ?? reference;
    images.set(name, { archive: path.resolve(dir, archive), reference });
  }
  return images;
}

async function realNodeReady(cluster: Cluster): Promise<boolean> {
  const nodes = await cluster.core.listNode({ labelSelector: REAL_NODE_SELECTOR });
  return nodes.items.some((n) =>
    n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
}

/**
 * Global setup's part: decides what the in-cluster suites run against, or why they cannot run
 * here (one line, for their skip): the local cluster without a real node (not root, packages
 * missing: up.sh said why), or another cluster without OUTRIGGER_E2E_IMAGE. On the local cluster
 * it builds Outrigger's image from the working tree and hands it to the node first.
 */
export async function prepareInCluster(cluster: Cluster): Promise<InClusterTarget | string> {
  if (!isLocalCluster()) {
    const image = process.env[IN_CLUSTER_ENV.image];
    const proxyImage = process.env[IN_CLUSTER_ENV.proxyImage];
    if (!image || !proxyImage) {
      return `${IN_CLUSTER_ENV.image} and ${IN_CLUSTER_ENV.proxyImage} name no images for this cluster (docs/testing.md)`;
    }
    const proxyValues = [`config.proxy.image=${proxyImage}`, `config.init.image=${proxyImage}`];
    const shipperImage = process.env[IN_CLUSTER_ENV.shipperImage];
    const shipperImageNext = process.env[IN_CLUSTER_ENV.shipperImageNext];
    return {
      image: splitReference(image),
      proxyImage,
      proxyValues,
      shipperImage,
      shipperImageNext,
    };
  }
  if (!(await realNodeReady(cluster))) {
    return 'the local cluster has no real node (e2e/cluster/up.sh said why when it started)';
  }
  const image = await buildOutriggerImage();
  const proxy = builtImages().get('demo-proxy');
  if (!proxy) return 'the demo proxy image is not built (make images)';
  const shipperImage = builtImages().get('log-shipper')?.reference;
  const shipperImageNext = shipperImage ? SHIPPER_NEXT_IMAGE : undefined;
  return { image, proxyImage: proxy.reference, proxyValues: [], shipperImage, shipperImageNext };
}

const TARGET_ENV = 'OUTRIGGER_E2E_IN_CLUSTER';

/** Hands global setup's decision to the test files. */
export function publishInClusterTarget(target: InClusterTarget | string): void {
  process.env[TARGET_ENV] = JSON.stringify(typeof target === 'string' ? { skip: target } : target);
}

/** The in-cluster target global setup chose, or the reason the suites skip. */
export function inClusterTarget(): InClusterTarget | string {
  const value = process.env[TARGET_ENV];
  if (!value) return `${TARGET_ENV} is not set: run the suites through make e2e`;
  const parsed = JSON.parse(value) as InClusterTarget | { skip: string };
  return 'skip' in parsed ? parsed.skip : parsed;
}

/**
 * Builds Outrigger's image from the working tree (skipped when the same sources were built
 * before) and hands it to the real node's containerd; `tag` forces a tag, for an upgrade.
 */
export async function buildOutriggerImage(tag?: string): Promise<ImageReference> {
  const env = { ...process.env, ...(tag ? { OUTRIGGER_IMAGE_TAG: tag } : {}) };
  const { stdout } = await run('bash', [path.join(clusterScriptsDir, 'images.sh'), 'outrigger'], {
    env,
    maxBuffer: 16 * 1024 * 1024,
  });
  const reference = stdout.trim().split('\n').pop() ?? '';
  // up.sh imported the others already
  await run('bash', [path.join(clusterScriptsDir, 'import-images.sh'), 'outrigger'], { env });
  return splitReference(reference);
}

/** The chart's values for an image: the only values a default install sets. */
export function imageValues(image: ImageReference): string[] {
  return [`image.repository=${image.repository}`, `image.tag=${image.tag}`];
}

/** `helm install|upgrade outrigger` of the chart into `namespace`, waiting for its pods. */
export async function helmRelease(
  verb: 'install' | 'upgrade',
  namespace: string,
  image: ImageReference,
  values: string[] = [],
): Promise<string> {
  return helm(
    verb,
    'outrigger',
    CHART_DIR,
    '--namespace',
    namespace,
    ...[...imageValues(image), ...values].flatMap((v) => ['--set', v]),
    '--wait',
    '--timeout',
    '3m',
  );
}

/**
 * Creates the namespace the chart is installed into (an earlier one is removed first), labelled
 * for the restricted Pod Security Standard as docs/install.md says, its pods on the real node.
 */
export async function createReleaseNamespace(
  cluster: Cluster,
  name = SYSTEM_NAMESPACE,
): Promise<void> {
  await deleteNamespace(cluster, name, { wait: true });
  await cluster.core.createNamespace({
    body: {
      metadata: {
        name,
        labels: {
          'outrigger.dev/e2e': 'true',
          'pod-security.kubernetes.io/enforce': 'restricted',
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
        annotations: realNodeNamespaceAnnotations(),
      },
    },
  });
}

/** The controller replica holding the Lease (its pod's name and a random suffix), or ''. */
export async function leaseHolder(cluster: Cluster): Promise<string> {
  const lease = (await cluster.objects.read({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: LEASE_NAME, namespace: SYSTEM_NAMESPACE },
  })) as { spec?: { holderIdentity?: string } };
  return lease.spec?.holderIdentity ?? '';
}

/** After an in-cluster suite: the release uninstalled, its namespace and the app's removed. */
export async function removeRelease(cluster: Cluster, app: string): Promise<void> {
  await helm('uninstall', 'outrigger', '--namespace', SYSTEM_NAMESPACE, '--wait').catch(
    () => undefined,
  );
  if (app) await deleteNamespace(cluster, app, { wait: true });
  await deleteNamespace(cluster, SYSTEM_NAMESPACE, { wait: true });
}
