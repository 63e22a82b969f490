// Inject or skip, and why. A pure function of the pod, its namespace and the configuration;
// the reason is a string-literal union shared by metrics, Events, logs and the CLI report.
//
// Opt-in precedence (first row that matches wins):
//
//   | namespace           | pod label  | pod annotation | result                  |
//   |---------------------|------------|----------------|-------------------------|
//   | system or excluded  | any        | any            | skip system-namespace   |
//   | any                 | disabled   | any            | skip opted-out          |
//   | any                 | enabled    | any            | inject                  |
//   | any                 | (none)     | disabled       | skip opted-out          |
//   | enabled             | (none)     | enabled/(none) | inject                  |
//   | not enabled         | (none)     | enabled/(none) | skip namespace-not-enabled |
//
// Only the label can opt a pod in where its namespace is not: admission selectors see labels.
// Then, in order: host-network, already-injected, other-mesh-sidecar, name-collision,
// job-without-native-sidecar.

import type { Config } from '../config/config';
import type { NamespaceMeta, PodLike } from '../kubernetes/k8s';
import {
  DISABLED,
  ENABLED,
  IDENTITY_VOLUME,
  INJECT,
  INJECTION_LABEL,
  KUBERNETES_SYSTEM_NAMESPACES,
  OTHER_MESH_ANNOTATIONS,
  OTHER_MESH_CONTAINERS,
  REVISION,
  STATUS,
  SYSTEM_NAMESPACE,
} from '../names';
import { runsToCompletion, type Owner } from './owner';
import { invalidSpec } from './shape';

export const SKIP_REASONS = [
  'system-namespace',
  'namespace-not-enabled',
  'opted-out',
  'invalid-pod-spec',
  'host-network',
  'already-injected',
  'other-mesh-sidecar',
  'name-collision',
  'job-without-native-sidecar',
] as const;

export type SkipReason = (typeof SKIP_REASONS)[number];

export type Decision = { inject: true } | { inject: false; reason: SkipReason; detail: string };

export interface DecideInput {
  pod: PodLike;
  /** The pod's namespace name, when known (admission requests carry it apart from the pod). */
  namespaceName: string | undefined;
  /**
   * The namespace's metadata, or `assume-enabled` where opt-in is decided elsewhere: manual
   * injection, and a standalone webhook whose configuration's selectors already filtered.
   */
  namespace: NamespaceMeta | 'assume-enabled';
  config: Config;
  owner: Owner;
  /** Whether the proxy would be a native sidecar (configuration, override and cluster support). */
  nativeSidecar: boolean;
  /** The namespace Outrigger itself runs in. */
  systemNamespace?: string;
}

const skip = (reason: SkipReason, detail: string): Decision => ({ inject: false, reason, detail });

export function isNamespaceEnabled(ns: NamespaceMeta): boolean {
  const annotation = ns.annotations?.[INJECT];
  // The annotation is the admin's word; the label is only its mirror and may lag behind.
  if (annotation !== undefined) return annotation === ENABLED;
  return ns.labels?.[INJECTION_LABEL] === ENABLED;
}

export function isExcludedNamespace(
  name: string,
  config: Config,
  systemNamespace = SYSTEM_NAMESPACE,
): boolean {
  return (
    name === systemNamespace ||
    KUBERNETES_SYSTEM_NAMESPACES.includes(name) ||
    config.excludeNamespaces.includes(name)
  );
}

export function decideOptIn(input: DecideInput): Decision {
  const { namespaceName, namespace, config } = input;
  if (
    namespaceName !== undefined &&
    isExcludedNamespace(namespaceName, config, input.systemNamespace)
  )
    return skip('system-namespace', `namespace ${namespaceName} is never injected`);
  const meta = input.pod.metadata ?? {};
  const label = meta.labels?.[INJECT];
  const annotation = meta.annotations?.[INJECT];
  if (label === DISABLED) return skip('opted-out', `label ${INJECT}=${DISABLED}`);
  if (label === ENABLED) return { inject: true };
  if (annotation === DISABLED) return skip('opted-out', `annotation ${INJECT}=${DISABLED}`);
  if (namespace === 'assume-enabled' || isNamespaceEnabled(namespace)) return { inject: true };
  const hint =
    annotation === ENABLED
      ? `; the annotation cannot opt a pod in, use the label ${INJECT}=${ENABLED}`
      : '';
  return skip('namespace-not-enabled', `namespace ${namespace.name} is not opted in${hint}`);
}

/** The names of the pod's containers, init containers included. */
export function containerNames(pod: PodLike): Set<string> {
  const names = new Set<string>();
  for (const c of pod.spec?.initContainers ?? []) names.add(c.name);
  for (const c of pod.spec?.containers ?? []) names.add(c.name);
  return names;
}

/** The sign of another mesh's proxy in the pod, if any. */
function otherMesh(pod: PodLike, names: Set<string>): string | undefined {
  const annotations = pod.metadata?.annotations ?? {};
  return (
    OTHER_MESH_CONTAINERS.find((n) => names.has(n)) ??
    OTHER_MESH_ANNOTATIONS.find((a) => a in annotations)
  );
}

/** Our names the pod already uses for something of its own. */
function collisions(pod: PodLike, names: Set<string>, config: Config): string[] {
  const taken = [config.proxy.name, config.init.name].filter((n) => names.has(n));
  if ((pod.spec?.volumes ?? []).some((v) => v.name === IDENTITY_VOLUME))
    taken.push(IDENTITY_VOLUME);
  return taken;
}

function isInjected(pod: PodLike, names: Set<string>, config: Config): boolean {
  const meta = pod.metadata ?? {};
  return (
    names.has(config.proxy.name) &&
    (meta.labels?.[REVISION] !== undefined || meta.annotations?.[STATUS] !== undefined)
  );
}

export function decidePod(input: DecideInput): Decision {
  const { pod, config } = input;
  const invalid = invalidSpec(pod);
  if (invalid) return skip('invalid-pod-spec', invalid);
  if (pod.spec?.hostNetwork === true)
    return skip(
      'host-network',
      "the pod uses the host network; redirecting its traffic would capture the node's",
    );
  const names = containerNames(pod);
  if (isInjected(pod, names, config))
    return skip('already-injected', `container ${config.proxy.name} is already there`);
  const mesh = otherMesh(pod, names);
  if (mesh)
    return skip('other-mesh-sidecar', `the pod already carries another mesh's proxy (${mesh})`);
  const taken = collisions(pod, names, config);
  if (taken.length > 0)
    return skip(
      'name-collision',
      `the pod already has ${taken.join(', ')}; rename it or opt the pod out`,
    );
  if (!input.nativeSidecar && completes(pod, input.owner))
    return skip(
      'job-without-native-sidecar',
      `a classic sidecar would keep the ${input.owner.kind} from completing; enable native sidecars`,
    );
  return { inject: true };
}

/** Pods that run to completion: a classic sidecar would keep them running for ever. */
function completes(pod: PodLike, owner: Owner): boolean {
  const policy = pod.spec?.restartPolicy;
  return runsToCompletion(owner) || policy === 'Never' || policy === 'OnFailure';
}

/** The whole decision: opt-in first, then what the pod itself allows. */
export function decide(input: DecideInput): Decision {
  const optIn = decideOptIn(input);
  return optIn.inject ? decidePod(input) : optIn;
}
