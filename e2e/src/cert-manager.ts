// cert-manager on the local cluster, for the cert-manager suite: the binary e2e/cluster/build.sh
// makes from cert-manager's Go module (our wrapper in e2e/cluster/cert-manager), in the image
// images.sh makes, run as pods on the real node. Its CRDs are read at install time from the
// module's deploy/crds in the Go module cache; everything else is our own minimal install,
// e2e/cluster/manifests/cert-manager.yaml. Installed before Outrigger's chart, removed after it.

import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { CustomObjectsApi, loadAllYaml, type KubernetesObject } from '@kubernetes/client-node';
import { isConflict, isNotFound } from '@outrigger/kube';
import { apply, parseManifests, remove, type Manifest } from './apply';
import type { Cluster } from './cluster';
import { realNodeNamespaceAnnotations } from './in-cluster';
import { deleteNamespace, E2E_NAMESPACE_LABEL } from './namespace';
import { clusterScriptsDir } from './paths';
import { waitForRollout } from './rollout';
import { done, pending, waitFor } from './wait';

const run = promisify(execFile);

export const CERT_MANAGER_NAMESPACE = 'cert-manager';
const DEPLOYMENTS = ['cert-manager-webhook', 'cert-manager-cainjector', 'cert-manager'];
/** cert-manager's webhook configurations (ours), both filled by the CA injector. */
const WEBHOOK_NAME = 'cert-manager-webhook';
const WEBHOOK_CA_SECRET = 'cert-manager-webhook-ca';
const GROUP = 'cert-manager.io';
const MINUTES = 60_000;

/** CERT_MANAGER_VERSION from e2e/cluster/versions.env, such as v1.21.2. */
export function certManagerVersion(): string {
  const text = readFileSync(path.join(clusterScriptsDir, 'versions.env'), 'utf8');
  const version = /^\s*CERT_MANAGER_VERSION=["']?([^"'\s#]+)/m.exec(text)?.[1];
  if (!version) throw new Error('e2e/cluster/versions.env does not set CERT_MANAGER_VERSION');
  return version;
}

/** The module's folder in the Go module cache (downloaded through the proxy if missing). */
async function moduleDir(version: string): Promise<string> {
  const { stdout } = await run(
    'go',
    ['mod', 'download', '-json', `github.com/cert-manager/cert-manager@${version}`],
    {
      cwd: tmpdir(),
      env: {
        ...process.env,
        PATH: `/usr/local/go/bin:${process.env.PATH ?? ''}`,
        GOTOOLCHAIN: 'local',
        GOFLAGS: '-mod=mod',
      },
    },
  );
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download gave no folder for cert-manager ${version}`);
  return dir;
}

/** cert-manager's CRDs, as its module ships them (deploy/crds/*.yaml). */
export async function certManagerCrds(version = certManagerVersion()): Promise<Manifest[]> {
  const dir = path.join(await moduleDir(version), 'deploy', 'crds');
  const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
  if (files.length === 0) throw new Error(`no CRDs in ${dir}`);
  // client-node's typed loading: the apply then sends x-kubernetes-* schema keys as written
  // (plain objects would lose them in client-node's serializer)
  return files.flatMap((f) => {
    const loaded: unknown[] = loadAllYaml(readFileSync(path.join(dir, f), 'utf8'));
    return loaded.filter(
      (o): o is Manifest => typeof (o as Manifest | null)?.metadata?.name === 'string',
    );
  });
}

/** Our install of cert-manager's three parts, the image filled in. */
export function certManagerManifests(image: string): Manifest[] {
  const text = readFileSync(path.join(clusterScriptsDir, 'manifests', 'cert-manager.yaml'), 'utf8');
  return parseManifests(text.replaceAll('@IMAGE@', image));
}

/** Builds the image (skipped when current) and hands it to the real node; its reference. */
async function certManagerImage(): Promise<string> {
  await run('bash', [path.join(clusterScriptsDir, 'images.sh'), 'cert-manager'], {
    maxBuffer: 16 * 1024 * 1024,
    timeout: 20 * MINUTES,
  });
  await run('bash', [path.join(clusterScriptsDir, 'import-images.sh'), 'cert-manager']);
  return `localhost/outrigger/cert-manager:${certManagerVersion().replace(/^v/, '')}`;
}

async function createCertManagerNamespace(cluster: Cluster): Promise<void> {
  await deleteNamespace(cluster, CERT_MANAGER_NAMESPACE, { wait: true });
  await cluster.core.createNamespace({
    body: {
      metadata: {
        name: CERT_MANAGER_NAMESPACE,
        labels: { [E2E_NAMESPACE_LABEL]: 'true' },
        annotations: realNodeNamespaceAnnotations(),
      },
    },
  });
}

async function crdsEstablished(cluster: Cluster, crds: Manifest[]): Promise<void> {
  for (const crd of crds) {
    await waitFor(`CRD ${crd.metadata.name} established`, async () => {
      const stored = (await cluster.objects.read(crd)) as {
        status?: { conditions?: { type: string; status: string }[] };
      };
      const ok = stored.status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      );
      return ok ? done(true) : pending(stored.status?.conditions);
    });
  }
}

/** base64 of a Secret's key, '' while the Secret or the key is missing. */
export async function secretData(
  cluster: Cluster,
  namespace: string,
  name: string,
  key: string,
): Promise<string> {
  try {
    const secret = await cluster.core.readNamespacedSecret({ name, namespace });
    return secret.data?.[key] ?? '';
  } catch (error) {
    if (isNotFound(error)) return '';
    throw error;
  }
}

/** The CA injector filled cert-manager's own webhook configurations with the webhook's CA. */
async function webhookCaInjected(cluster: Cluster): Promise<void> {
  await waitFor(
    "cert-manager's webhook configurations injected with its serving CA",
    async () => {
      const ca = await secretData(cluster, CERT_MANAGER_NAMESPACE, WEBHOOK_CA_SECRET, 'ca.crt');
      const validating = await cluster.admission.readValidatingWebhookConfiguration({
        name: WEBHOOK_NAME,
      });
      const mutating = await cluster.admission.readMutatingWebhookConfiguration({
        name: WEBHOOK_NAME,
      });
      const bundles = [...(validating.webhooks ?? []), ...(mutating.webhooks ?? [])].map(
        (w) => w.clientConfig.caBundle ?? '',
      );
      // the state shown: the base64 tails, enough to tell CAs apart
      return ca && bundles.every((b) => b === ca)
        ? done(true)
        : pending({ ca: ca.slice(-16), bundles: bundles.map((b) => b.slice(-16)) });
    },
    { timeoutMs: 2 * MINUTES, intervalMs: 500 },
  );
}

/** A dry-run Issuer passes cert-manager's webhook: it answers, and the API server trusts it. */
async function webhookAnswers(cluster: Cluster): Promise<void> {
  const issuer: KubernetesObject & { spec: object } = {
    apiVersion: `${GROUP}/v1`,
    kind: 'Issuer',
    metadata: { name: 'e2e-probe', namespace: CERT_MANAGER_NAMESPACE },
    spec: { selfSigned: {} },
  };
  await waitFor(
    "cert-manager's webhook admitting a dry-run Issuer",
    async () => {
      try {
        return done(await cluster.objects.create(issuer, undefined, 'All'));
      } catch (error) {
        return pending(error instanceof Error ? error.message : String(error));
      }
    },
    { timeoutMs: 2 * MINUTES, intervalMs: 500 },
  );
}

/**
 * Installs cert-manager: the image, the CRDs from the module, our manifests, then waits until
 * its Deployments rolled out, the CA injector filled its webhook's configurations and the
 * webhook admits a dry-run Issuer.
 */
export async function installCertManager(cluster: Cluster): Promise<void> {
  const image = await certManagerImage();
  const crds = await certManagerCrds();
  await apply(cluster, crds);
  await crdsEstablished(cluster, crds);
  // a fresh install: what an earlier run left (webhook configurations holding an older CA
  // among it) goes first
  const manifests = certManagerManifests(image);
  await remove(cluster, manifests, { wait: true });
  await createCertManagerNamespace(cluster);
  await apply(cluster, manifests);
  for (const name of DEPLOYMENTS) {
    await waitForRollout(
      cluster,
      { kind: 'Deployment', name, namespace: CERT_MANAGER_NAMESPACE },
      { timeoutMs: 2 * MINUTES },
    );
  }
  await webhookCaInjected(cluster);
  await webhookAnswers(cluster);
}

/** Removes what installCertManager made: webhook configurations first, then CRDs (and so
 * every cert-manager resource), the namespace and the cluster-wide RBAC. */
export async function uninstallCertManager(cluster: Cluster): Promise<void> {
  await remove(cluster, certManagerManifests('unused'), { wait: true });
  await remove(cluster, await certManagerCrds(), { wait: true });
  await deleteNamespace(cluster, CERT_MANAGER_NAMESPACE, { wait: true });
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

export interface CertificateObject extends KubernetesObject {
  status?: { conditions?: Condition[]; revision?: number };
}

/** A Certificate, as stored. */
export async function readCertificate(
  cluster: Cluster,
  namespace: string,
  name: string,
): Promise<CertificateObject> {
  return cluster.objects.read<CertificateObject>({
    apiVersion: `${GROUP}/v1`,
    kind: 'Certificate',
    metadata: { name, namespace },
  });
}

/**
 * Forces a re-issuance the way `cmctl renew` does: the Certificate's Issuing condition set to
 * True with reason ManuallyTriggered, through the status subresource (retried on a conflict
 * with cert-manager's own status writes).
 */
export async function triggerIssuance(
  cluster: Cluster,
  namespace: string,
  name: string,
): Promise<void> {
  const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
  await waitFor(
    `Certificate ${namespace}/${name} set Issuing=True (ManuallyTriggered)`,
    async () => {
      const certificate = await readCertificate(cluster, namespace, name);
      const conditions = (certificate.status?.conditions ?? []).filter((c) => c.type !== 'Issuing');
      conditions.push({
        type: 'Issuing',
        status: 'True',
        reason: 'ManuallyTriggered',
        message: 'Certificate re-issuance manually triggered by the e2e suite',
        lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        observedGeneration: certificate.metadata?.generation,
      });
      try {
        await custom.replaceNamespacedCustomObjectStatus({
          group: GROUP,
          version: 'v1',
          namespace,
          plural: 'certificates',
          name,
          body: { ...certificate, status: { ...certificate.status, conditions } },
        });
        return done(true);
      } catch (error) {
        if (isConflict(error)) return pending('conflict: read again');
        throw error;
      }
    },
  );
}
