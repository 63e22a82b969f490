// The namespace reconcile: mirror the admin's opt-in annotation (outrigger.dev/inject) to the
// label the webhook configuration's namespaceSelector matches (outrigger.dev/injection).
//
//   | namespace            | annotation          | label wanted |
//   |----------------------|---------------------|--------------|
//   | system or excluded   | any                 | (none)       |
//   | any other            | enabled             | enabled      |
//   | any other            | disabled, other, or absent | (none) |
//
// Opted out means the label is removed, not set to `disabled`: the webhook entries select
// `injection=enabled` (and the pod opt-in entry `injection NotIn [enabled]`), so an absent label
// and `disabled` select the same; removing it means a namespace nobody opted in is never written,
// and a first start on a cluster of thousands of namespaces makes no writes for them.
// A stale label on a system namespace is removed too: they are never injected.

import type { V1Namespace } from '@kubernetes/client-node';
import {
  ENABLED,
  FIELD_MANAGER,
  INJECT,
  INJECTION_LABEL,
  KUBERNETES_SYSTEM_NAMESPACES,
  namespaceMeta,
  type NamespaceMeta,
} from '@outrigger/shared';
import { isConflict, type KubeApi } from '@outrigger/kube';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import type { Result } from './watch/queue';

/** The kind of a namespace's key: `Namespace/<name>`. */
export const NAMESPACE_KEY_KIND = 'Namespace';
export const NAMESPACE_KEY_PREFIX = `${NAMESPACE_KEY_KIND}/`;

export const namespaceKey = (name: string): string => `${NAMESPACE_KEY_PREFIX}${name}`;

/** The namespace a key names, or undefined when the key is not a namespace's. */
export function namespaceOfKey(key: string): string | undefined {
  return key.startsWith(NAMESPACE_KEY_PREFIX) ? key.slice(NAMESPACE_KEY_PREFIX.length) : undefined;
}

export interface NamespacePolicy {
  /** The namespace Outrigger runs in. */
  systemNamespace: string;
  /** More namespaces never labelled (the configuration's excludeNamespaces, later). */
  excluded?: readonly string[];
}

export function isSystemNamespace(name: string, policy: NamespacePolicy): boolean {
  return (
    name === policy.systemNamespace ||
    KUBERNETES_SYSTEM_NAMESPACES.includes(name) ||
    (policy.excluded ?? []).includes(name)
  );
}

/** The injection label the namespace should carry; undefined: none. */
export function desiredInjectionLabel(
  ns: NamespaceMeta,
  policy: NamespacePolicy,
): typeof ENABLED | undefined {
  if (isSystemNamespace(ns.name, policy)) return undefined;
  return ns.annotations?.[INJECT] === ENABLED ? ENABLED : undefined;
}

/** A JSON merge patch: null removes the label. */
export interface LabelPatch {
  metadata: { labels: Record<string, string | null>; resourceVersion?: string };
}

/**
 * The merge patch that makes the label what it should be, or undefined when it already is
 * (a steady cluster gets zero writes). The patch carries the resourceVersion the decision was
 * made on, so a namespace changed meanwhile answers 409 and is decided again.
 */
export function namespaceLabelPatch(
  ns: NamespaceMeta & { resourceVersion?: string },
  policy: NamespacePolicy,
): LabelPatch | undefined {
  const want = desiredInjectionLabel(ns, policy);
  const have = ns.labels?.[INJECTION_LABEL];
  if (have === want) return undefined;
  const metadata: LabelPatch['metadata'] = { labels: { [INJECTION_LABEL]: want ?? null } };
  if (ns.resourceVersion) metadata.resourceVersion = ns.resourceVersion;
  return { metadata };
}

export interface NamespaceReconcilerDeps {
  api: Pick<KubeApi, 'patch'>;
  /** The cache's view of a namespace (never changed here). */
  get: (name: string) => V1Namespace | undefined;
  policy: NamespacePolicy;
  /** Waits for a token of the global write limit. */
  acquireWrite: () => Promise<void>;
  onWrite: (name: string, patch: LabelPatch) => void;
}

/** Reads the namespace from the cache, decides, and patches only when something differs. */
export async function reconcileNamespace(
  name: string,
  deps: NamespaceReconcilerDeps,
): Promise<Result> {
  const ns = deps.get(name);
  // Deleted: nothing to mirror.
  if (!ns) return { done: true };
  const patch = namespaceLabelPatch(namespaceMeta(ns), deps.policy);
  if (!patch) return { done: true };
  await deps.acquireWrite();
  deps.onWrite(name, patch);
  try {
    await deps.api.patch(`/api/v1/namespaces/${name}`, patch, 'merge', {
      fieldManager: FIELD_MANAGER,
    });
  } catch (err) {
    // 409: the cache is behind the namespace. Its watch event adds the key again; the requeue
    // covers a watch that is slow to deliver it. Not a failure, so no back-off and no warning.
    if (isConflict(err)) return { requeueAfterMs: CONFLICT_REQUEUE_MS };
    throw err;
  }
  return { done: true };
}

export const CONFLICT_REQUEUE_MS = 1000;

/** The onWrite of reconcileNamespace that counts the write and logs it. */
export const reportLabelWrite =
  (metrics: ControllerMetrics, logger: Logger) =>
  (namespace: string, patch: LabelPatch): void => {
    metrics.writes.inc({ resource: 'namespaces', verb: 'patch' });
    logger.info('mirroring the opt-in to the namespace label', {
      namespace,
      labels: patch.metadata.labels,
    });
  };
