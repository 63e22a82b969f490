// Applying manifests the way `kubectl apply --server-side` does (YAML text or objects, in order,
// with a field manager), and deleting them again.

import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { apiErrorWithStatus as errorMessage, isNotFound } from '@outrigger/kube';
import type { Cluster } from './cluster';
import { pending, done, waitFor, type WaitOptions } from './wait';

/** The field manager of everything the harness applies. */
export const FIELD_MANAGER = 'outrigger-e2e';

/** A manifest the API server can address: apiVersion, kind and a name are present. */
export type Manifest = KubernetesObject & {
  apiVersion: string;
  kind: string;
  metadata: NonNullable<KubernetesObject['metadata']> & { name: string };
};

/** Multi-document YAML, one object, or a list of objects. */
export type Manifests = string | KubernetesObject | readonly KubernetesObject[];

export interface ApplyOptions {
  /** The namespace of namespaced objects that name none (required for those). */
  namespace?: string;
  fieldManager?: string;
  /** Take over fields another manager owns (default true: tests own what they apply). */
  force?: boolean;
}

export interface DeleteOptions {
  /** The namespace of namespaced objects that name none. */
  namespace?: string;
  /** Background (default), Foreground or Orphan. */
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan';
  /** Wait until every object is gone (default false). */
  wait?: boolean;
  waitOptions?: WaitOptions;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isManifest(value: unknown): value is Manifest {
  if (!isRecord(value) || !isRecord(value.metadata)) return false;
  return (
    typeof value.apiVersion === 'string' &&
    typeof value.kind === 'string' &&
    typeof value.metadata.name === 'string'
  );
}

function toManifest(value: unknown, where: string): Manifest {
  if (!isManifest(value)) {
    throw new Error(
      `${where} is not a Kubernetes object: it needs apiVersion, kind and metadata.name`,
    );
  }
  return value;
}

/** Parses multi-document YAML; empty documents are skipped, a `kind: List` is flattened. */
export function parseManifests(text: string): Manifest[] {
  const manifests: Manifest[] = [];
  parseAllDocuments(text).forEach((document, index) => {
    const where = `YAML document ${index + 1}`;
    const [error] = document.errors;
    if (error) throw new Error(`${where}: ${error.message}`);
    const value: unknown = document.toJS();
    if (value === null || value === undefined) return;
    if (isRecord(value) && value.kind === 'List' && Array.isArray(value.items)) {
      value.items.forEach((item: unknown, i) =>
        manifests.push(toManifest(item, `${where}, item ${i + 1}`)),
      );
      return;
    }
    manifests.push(toManifest(value, where));
  });
  return manifests;
}

/** The manifests as objects, whatever form they came in. */
export function toManifests(input: Manifests): Manifest[] {
  if (typeof input === 'string') return parseManifests(input);
  const list: readonly KubernetesObject[] = Array.isArray(input) ? input : [input];
  return list.map((object, i) => toManifest(object, `object ${i + 1}`));
}

export function describeObject(object: Manifest): string {
  const namespace = object.metadata.namespace;
  return `${object.kind} ${namespace ? `${namespace}/` : ''}${object.metadata.name}`;
}

/** A copy with the namespace filled in for namespaced kinds (an error if none is known). */
async function placed(cluster: Cluster, object: Manifest, namespace?: string): Promise<Manifest> {
  if (!(await cluster.objects.isNamespaced(object.apiVersion, object.kind))) {
    const metadata = { ...object.metadata };
    delete metadata.namespace;
    return { ...object, metadata };
  }
  const resolved = object.metadata.namespace ?? namespace;
  if (!resolved) {
    throw new Error(
      `${describeObject(object)} is namespaced: set metadata.namespace or pass { namespace }`,
    );
  }
  return { ...object, metadata: { ...object.metadata, namespace: resolved } };
}

/**
 * Server-side applies each object in order and returns what the API server stored. Errors name
 * the object and keep the server's message.
 */
export async function apply(
  cluster: Cluster,
  input: Manifests,
  options: ApplyOptions = {},
): Promise<KubernetesObject[]> {
  const applied: KubernetesObject[] = [];
  for (const manifest of toManifests(input)) {
    const object = await placed(cluster, manifest, options.namespace);
    try {
      applied.push(
        await cluster.objects.patch(
          object,
          undefined,
          undefined,
          options.fieldManager ?? FIELD_MANAGER,
          options.force ?? true,
          PatchStrategy.ServerSideApply,
        ),
      );
    } catch (error) {
      throw new Error(`applying ${describeObject(object)} failed: ${errorMessage(error)}`, {
        cause: error,
      });
    }
  }
  return applied;
}

async function deleteOne(
  cluster: Cluster,
  object: Manifest,
  options: DeleteOptions,
): Promise<void> {
  try {
    await cluster.objects.delete(
      object,
      undefined,
      undefined,
      undefined,
      undefined,
      options.propagationPolicy ?? 'Background',
    );
  } catch (error) {
    if (isNotFound(error)) return;
    throw new Error(`deleting ${describeObject(object)} failed: ${errorMessage(error)}`, {
      cause: error,
    });
  }
}

async function waitUntilGone(
  cluster: Cluster,
  object: Manifest,
  options?: WaitOptions,
): Promise<void> {
  await waitFor(
    `${describeObject(object)} to be deleted`,
    async () => {
      try {
        const current = await cluster.objects.read(object);
        return pending({
          deletionTimestamp: current.metadata?.deletionTimestamp,
          finalizers: current.metadata?.finalizers,
        });
      } catch (error) {
        if (isNotFound(error)) return done(undefined);
        throw error;
      }
    },
    options,
  );
}

/** Deletes the objects in reverse order; objects that are already gone are fine. */
export async function remove(
  cluster: Cluster,
  input: Manifests,
  options: DeleteOptions = {},
): Promise<void> {
  const objects: Manifest[] = [];
  for (const manifest of toManifests(input).reverse()) {
    objects.push(await placed(cluster, manifest, options.namespace));
  }
  for (const object of objects) await deleteOne(cluster, object, options);
  if (!options.wait) return;
  for (const object of objects) await waitUntilGone(cluster, object, options.waitOptions);
}
