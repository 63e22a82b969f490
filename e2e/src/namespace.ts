// Throwaway test namespaces: uniquely named, labelled so leftovers can be found
// (kubectl delete namespace -l outrigger.dev/e2e=true), ready for pods, and deleted afterwards.

import { randomBytes } from 'node:crypto';
import { apiErrorWithStatus as errorMessage, isConflict, isNotFound } from '@outrigger/kube';
import type { Cluster } from './cluster';
import { dumpNamespace } from './dump';
import { done, pending, waitFor, type WaitOptions } from './wait';

/** Every namespace the harness creates carries this label with the value "true". */
export const E2E_NAMESPACE_LABEL = 'outrigger.dev/e2e';

export interface NamespaceOptions {
  /** The start of the name (default "e2e"); a random suffix follows. */
  prefix?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /**
   * Wait until the ServiceAccount controller made the `default` ServiceAccount (default true):
   * until then the API server rejects pods that do not name another ServiceAccount.
   */
  waitForDefaultServiceAccount?: boolean;
  waitOptions?: WaitOptions;
}

export interface DeleteNamespaceOptions {
  /** Wait until the namespace controller removed it and everything in it (default false). */
  wait?: boolean;
  waitOptions?: WaitOptions;
}

const MAX_NAME = 63;
const SUFFIX_BYTES = 3;

function namespaceName(prefix: string): string {
  const clean = prefix
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '');
  const suffix = randomBytes(SUFFIX_BYTES).toString('hex');
  return `${(clean || 'e2e').slice(0, MAX_NAME - suffix.length - 1)}-${suffix}`;
}

async function createUnique(cluster: Cluster, options: NamespaceOptions): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const name = namespaceName(options.prefix ?? 'e2e');
    const labels = { ...options.labels, [E2E_NAMESPACE_LABEL]: 'true' };
    try {
      await cluster.core.createNamespace({
        body: { metadata: { name, labels, annotations: options.annotations } },
      });
      return name;
    } catch (error) {
      if (!isConflict(error) || attempt >= 5) {
        throw new Error(`creating namespace ${name} failed: ${errorMessage(error)}`, {
          cause: error,
        });
      }
    }
  }
}

/** Creates a uniquely named namespace and returns its name. */
export async function createNamespace(
  cluster: Cluster,
  options: NamespaceOptions = {},
): Promise<string> {
  const name = await createUnique(cluster, options);
  if (options.waitForDefaultServiceAccount ?? true) {
    await waitFor(
      `the default ServiceAccount in namespace ${name}`,
      async () => {
        try {
          return done(
            await cluster.core.readNamespacedServiceAccount({ name: 'default', namespace: name }),
          );
        } catch (error) {
          if (isNotFound(error)) return pending('not created yet');
          throw error;
        }
      },
      options.waitOptions,
    );
  }
  return name;
}

/** Deletes a namespace (fine if it is already gone), optionally waiting until it has disappeared. */
export async function deleteNamespace(
  cluster: Cluster,
  name: string,
  options: DeleteNamespaceOptions = {},
): Promise<void> {
  try {
    await cluster.core.deleteNamespace({ name });
  } catch (error) {
    if (isNotFound(error)) return;
    throw new Error(`deleting namespace ${name} failed: ${errorMessage(error)}`, { cause: error });
  }
  if (!options.wait) return;
  await waitFor(
    `namespace ${name} to be deleted`,
    async () => {
      try {
        const namespace = await cluster.core.readNamespace({ name });
        return pending({
          phase: namespace.status?.phase,
          conditions: namespace.status?.conditions,
        });
      } catch (error) {
        if (isNotFound(error)) return done(undefined);
        throw error;
      }
    },
    { timeoutMs: 60_000, ...options.waitOptions },
  );
}

/**
 * Runs `body` in a fresh namespace and deletes the namespace afterwards, whether `body` passed or
 * not. When it fails, the namespace's objects and events are first written to the run's log
 * folder (dumps/<namespace>.yaml) to show what the cluster looked like.
 */
export async function withNamespace<T>(
  cluster: Cluster,
  options: NamespaceOptions & DeleteNamespaceOptions,
  body: (namespace: string) => Promise<T>,
): Promise<T> {
  const namespace = await createNamespace(cluster, options);
  try {
    return await body(namespace);
  } catch (error) {
    await dumpNamespace(cluster, namespace).catch(() => undefined);
    throw error;
  } finally {
    await deleteNamespace(cluster, namespace, options);
  }
}
