// Injection: the proxy (a native sidecar where possible, else the first regular container),
// the init container that redirects traffic, the identity volume, and the labels and
// annotations of names.ts, as an RFC 6902 patch that only adds.

import type { Config } from '../config/config';
import { decide, type Decision, type SkipReason } from './decide';
import {
  deepFreeze,
  type Container,
  type NamespaceMeta,
  type PodLike,
  type ResourceRequirements,
} from '../kubernetes/k8s';
import { labelValue } from '../kubernetes/label';
import { IDENTITY_VOLUME, OWNER_KIND, OWNER_NAME, REVISION, SKIPPED, STATUS } from '../names';
import { resolveOwner, type Owner } from './owner';
import { resolveOverrides, type Overrides } from './overrides';
import { registerFragment, type AddOperation } from './patch';
import { placementOf, type CarriedSet } from './carried-sets';
import { PROXY_INJECT_KEY, otherSets, setOptOut } from './set-injection';
import type { SetParts } from './set-parts';
import {
  DEFAULT_CONTAINER,
  NO_SPEC,
  inAppliedOrder,
  takesFirstContainer,
  metadataOps,
  setsOnlyPatch,
  specOps,
  withSetMarks,
  type Contribution,
} from './set-patch';
import { initContainer, proxyContainer, type ProxyBuild } from './proxy-containers';
import { DEFAULT_SET, DEFAULT_SET_ORDER } from '../config/sidecar-set';
import { proxyResources } from './proxy-resources';
import { volumeOrderOf } from './volume-order';
import { keptPatch, keyId } from './kept-patches';
import { configRevision } from '../config/revision';

/**
 * A configuration with its revision, computed once when the configuration is loaded. The
 * configuration is deeply frozen: patches share its parts instead of copying them per pod.
 */
export interface ConfigSnapshot {
  readonly config: Config;
  readonly revision: string;
}

export function makeSnapshot(config: Config): ConfigSnapshot {
  return frozenSnapshot(config, configRevision(config));
}

/** A snapshot under a revision given, for pinned pods (revision-history.ts). */
export function frozenSnapshot(config: Config, revision: string): ConfigSnapshot {
  return Object.freeze({ config: deepFreeze(config), revision });
}

export interface InjectInput {
  pod: PodLike;
  snapshot: ConfigSnapshot;
  namespaceName: string | undefined;
  namespace: NamespaceMeta | 'assume-enabled';
  /** Whether the cluster runs native sidecars (Kubernetes 1.29 and newer). */
  nativeSidecarSupported: boolean;
  /** The owner when the caller knows better than the pod (a workload's template); else resolved from the pod. */
  owner?: Owner;
  systemNamespace?: string;
}

export type InjectionResult =
  | {
      injected: true;
      /** Shared with other pods whose patch is the same when frozen (see buildPatch). */
      patch: readonly AddOperation[];
      warnings: string[];
      owner: Owner;
      native: boolean;
      /** The sets the pod got, in applied order; `proxy` first unless a set's order is lower. */
      sets: string[];
      /** Why the pod did not get the proxy, when it got other sets only. */
      proxySkipped?: { reason: SkipReason; detail: string };
    }
  | { injected: false; reason: SkipReason; detail: string; warnings: string[]; owner: Owner };

export function useNativeSidecar(
  config: Config,
  overrides: Overrides,
  supported: boolean,
): boolean {
  const wanted = overrides['native-sidecar'];
  if (wanted !== undefined) return wanted && supported;
  if (config.nativeSidecar === 'auto') return supported;
  return config.nativeSidecar === 'true';
}

export function injectPod(input: InjectInput): InjectionResult {
  const { pod, snapshot } = input;
  const { config } = snapshot;
  const owner = input.owner ?? resolveOwner(pod);
  const namespaceAnnotations =
    input.namespace === 'assume-enabled' ? undefined : input.namespace.annotations;
  const { values, warnings } = resolveOverrides({
    podAnnotations: pod.metadata?.annotations,
    namespaceAnnotations,
    namespaceName: input.namespaceName,
    config,
    podDescription: `${owner.kind} ${owner.name}`,
  });
  const native = useNativeSidecar(config, values, input.nativeSidecarSupported);
  // Spelled out, not `{ ...input, config, owner, nativeSidecar }`: V8's optimized code gives an
  // object spread and then given new properties a map of its own each time (about a
  // microsecond a property, and a map left for the collector): docs/benchmarks.md, Webhook,
  // "What an admission's parts cost", row "object spreads".
  const decision: Decision = decide({
    pod,
    namespaceName: input.namespaceName,
    namespace: input.namespace,
    config,
    owner,
    nativeSidecar: native,
    systemNamespace: input.systemNamespace,
  });
  // The proxy's own opt-out (the default set's) leaves the other sets to decide for themselves.
  const proxyOff = decision.inject ? setOptOut(PROXY_INJECT_KEY, pod, input.namespace) : undefined;
  const proxy: Decision = proxyOff
    ? { inject: false, reason: 'opted-out', detail: proxyOff }
    : decision;
  const extras = otherSets(config, proxy, proxyOff !== undefined, {
    pod,
    namespace: input.namespace,
    owner,
    nativeSidecarSupported: input.nativeSidecarSupported,
  });
  const allWarnings = extras.warnings.length === 0 ? warnings : [...warnings, ...extras.warnings];
  if (!proxy.inject)
    return withoutProxy(
      pod,
      proxy,
      { parts: extras.parts, config },
      { warnings: allWarnings, owner, native },
    );
  const { resources, warnings: resourceWarnings } = proxyResources(config, values);
  const patch = buildPatch({
    pod,
    snapshot,
    owner,
    overrides: values,
    native,
    resources,
    extras: extras.parts,
    carried: placementOf(pod, config, extras.parts),
  });
  return {
    injected: true,
    patch,
    warnings: resourceWarnings.length === 0 ? allWarnings : [...allWarnings, ...resourceWarnings],
    owner,
    native,
    sets: inAppliedOrder(PROXY_PLACE, extras.parts).map((p) => p.name),
  };
}

/** Where the proxy goes among the sets. */
const PROXY_PLACE = { name: DEFAULT_SET, order: DEFAULT_SET_ORDER };

/** A pod the proxy skips: the other sets' patch with the proxy's skip mark, or the skip. */
function withoutProxy(
  pod: PodLike,
  proxy: Extract<Decision, { inject: false }>,
  { parts, config }: { parts: readonly SetParts[]; config: Config },
  base: { warnings: string[]; owner: Owner; native: boolean },
): InjectionResult {
  const { reason, detail } = proxy;
  if (parts.length === 0)
    return { injected: false, reason, detail, warnings: base.warnings, owner: base.owner };
  return {
    injected: true,
    patch: setsOnlyPatch(pod, reason, parts, {
      order: volumeOrderOf(config),
      carried: placementOf(pod, config, parts),
    }),
    ...base,
    sets: parts.map((p) => p.name),
    proxySkipped: { reason, detail },
  };
}

interface Build {
  pod: PodLike;
  snapshot: ConfigSnapshot;
  /** Only for the pod's own metadata: the sidecar parts must not depend on the owner. */
  owner: Owner;
  overrides: Overrides;
  native: boolean;
  resources: ResourceRequirements;
  /** The other sets the pod gets, in applied order. */
  extras: readonly SetParts[];
  /** The sets the pod carries already, when placement is among them (carried-sets.ts): almost never. */
  carried: readonly CarriedSet[] | undefined;
}

/**
 * The pod's patch, built once for the pods whose patch is the same: the same sidecar parts
 * (configuration and overrides), the same owner, and the same answers to what newPatch asks of
 * the pod (patchKey). A ReplicaSet's pods share one, from the second on (a patch kept for a pod
 * whose owner never makes another cost more than it saved); the webhook encodes a shared patch
 * once as well (webhook/src/review.ts). Building and encoding the patch for every pod was a
 * seventh of an admission's CPU time. A shared patch is frozen. What is kept, and its bound
 * (kept-patches.ts), are measured in docs/benchmarks.md, Webhook, "What an admission's parts cost",
 * rows "the patch" and "the kept patches' bound".
 */
function buildPatch(build: Build): readonly AddOperation[] {
  const parts = sidecarParts(build);
  // Where a carried set's items are decides where the new ones go: no key says that.
  if (build.carried) return newPatch(build, parts);
  let id = String(keyId(parts));
  for (const extra of build.extras) id += `+${keyId(extra)}`;
  // The volumes' order is the configuration's, and a set's parts may outlive one configuration.
  id += `/${keyId(volumeOrderOf(build.snapshot.config))}`;
  return keptPatch(patchKey(id, build), () => newPatch(build, parts));
}

/** Whether a classic container goes before the app's (the proxy's or a set's): the app's needs naming. */
const namesFirst = (build: Build): boolean => !build.native || takesFirstContainer(build.extras);

/** Whether addToMap and addToList create the map or list whole. */
const absent = (value: unknown): string => (value === undefined || value === null ? '1' : '0');
/** Whether newPatch adds one of our annotations: only where the pod has no value, not even null. */
const unset = (value: unknown): string => (value === undefined ? '1' : '0');

/** Everything newPatch reads of the pod and its owner, beside the sidecar parts, as one key. */
function patchKey(partsKey: string, build: Build): string {
  const { pod, owner } = build;
  const meta = pod.metadata;
  const spec = pod.spec ?? NO_SPEC;
  const annotations = meta?.annotations ?? {};
  const first = namesFirst(build) ? String(spec.containers[0]?.name ?? '') : '';
  const flags =
    absent(meta) +
    absent(meta?.labels) +
    absent(meta?.annotations) +
    unset(annotations[OWNER_KIND]) +
    unset(annotations[OWNER_NAME]) +
    unset(annotations[DEFAULT_CONTAINER]) +
    absent(spec.initContainers) +
    absent(spec.containers) +
    absent(spec.volumes);
  const kind = String(owner.kind);
  const name = String(owner.name);
  // Lengths first: no owner or container name can make two different pods' keys the same.
  return `${partsKey}:${flags}${kind.length}:${kind}${name.length}:${name}${first}`;
}

function newPatch(build: Build, parts: SidecarParts): AddOperation[] {
  const spec = build.pod.spec ?? NO_SPEC;
  const annotations: Record<string, string> = { [STATUS]: parts.status };
  const podAnnotations = build.pod.metadata?.annotations ?? {};
  // The proxy reads its owner from these (labels may be shortened; annotations never are).
  if (podAnnotations[OWNER_KIND] === undefined) annotations[OWNER_KIND] = build.owner.kind;
  if (podAnnotations[OWNER_NAME] === undefined) annotations[OWNER_NAME] = build.owner.name;
  const firstUserContainer = spec.containers[0]?.name;
  if (namesFirst(build) && firstUserContainer && podAnnotations[DEFAULT_CONTAINER] === undefined)
    annotations[DEFAULT_CONTAINER] = firstUserContainer;
  const labels: Record<string, string> = {
    [REVISION]: build.snapshot.revision,
    [OWNER_KIND]: labelValue(build.owner.kind),
    [OWNER_NAME]: labelValue(build.owner.name),
  };
  const proxy: Contribution = {
    order: DEFAULT_SET_ORDER,
    name: DEFAULT_SET,
    position: 'before-app',
    initContainers: parts.initContainers,
    containers: parts.containers,
    volumes: PROXY_VOLUMES,
    initLast: !build.native,
  };
  return [
    ...metadataOps(
      build.pod,
      withSetMarks(labels, build.extras, 'labels'),
      withSetMarks(annotations, build.extras, 'annotations'),
    ),
    ...specOps(
      spec,
      inAppliedOrder(proxy, build.extras),
      volumeOrderOf(build.snapshot.config),
      build.carried,
    ),
  ];
}

const IDENTITY_VOLUME_SOURCE = deepFreeze({
  name: IDENTITY_VOLUME,
  emptyDir: { medium: 'Memory' },
});
registerFragment(IDENTITY_VOLUME_SOURCE);
const PROXY_VOLUMES = [IDENTITY_VOLUME_SOURCE];

/** What injection adds that depends only on the configuration and the overrides, not the pod. */
interface SidecarParts {
  initContainers: readonly Container[];
  containers: readonly Container[];
  /** The value of the outrigger.dev/status annotation. */
  status: string;
}

/** At most this many override combinations are kept per configuration. */
const MAX_PARTS_PER_SNAPSHOT = 256;
const partsCache = new WeakMap<ConfigSnapshot, Map<string, SidecarParts>>();

/**
 * The sidecar containers, built once per configuration snapshot and combination of overrides,
 * frozen, with their JSON computed once (see serializePatch): almost every pod of a cluster
 * shares a handful of combinations, so the webhook serializes them once, not once per pod.
 */
function sidecarParts(build: Build): SidecarParts {
  // Nearly every pod has no overrides: a constant key spares serializing the rest.
  const plain = Object.keys(build.overrides).length === 0;
  const key = plain
    ? `plain:${build.native}`
    : JSON.stringify([
        build.native,
        build.resources,
        build.overrides['proxy-image'],
        build.overrides['proxy-log-level'],
        build.overrides['init-container'],
        build.overrides['skip-inbound-ports'],
        build.overrides['skip-outbound-ports'],
      ]);
  let forSnapshot = partsCache.get(build.snapshot);
  if (!forSnapshot) partsCache.set(build.snapshot, (forSnapshot = new Map<string, SidecarParts>()));
  const cached = forSnapshot.get(key);
  if (cached) return cached;
  const parts = buildParts(build);
  if (forSnapshot.size >= MAX_PARTS_PER_SNAPSHOT) forSnapshot.clear();
  forSnapshot.set(key, parts);
  return parts;
}

function buildParts(build: ProxyBuild): SidecarParts {
  const useInit = build.overrides['init-container'] ?? build.snapshot.config.init.enabled;
  const proxy = registerFragment(deepFreeze(proxyContainer(build)));
  const init = useInit ? [registerFragment(deepFreeze(initContainer(build)))] : [];
  const initContainers = build.native ? [...init, proxy] : init;
  const containers = build.native ? [] : [proxy];
  const status = JSON.stringify({
    revision: build.snapshot.revision,
    initContainers: initContainers.map((c) => c.name),
    containers: containers.map((c) => c.name),
    volumes: [IDENTITY_VOLUME],
  });
  return { initContainers, containers, status };
}

/**
 * The proxy's parts at a revision for a pod without overrides, and its volumes: what an
 * admission policy compiled from the revision adds (shared/src/policy/).
 */
export function plainProxyParts(
  snapshot: ConfigSnapshot,
  native: boolean,
): SidecarParts & { volumes: readonly { name: string }[] } {
  const { resources } = proxyResources(snapshot.config, {});
  return { ...buildParts({ snapshot, overrides: {}, native, resources }), volumes: PROXY_VOLUMES };
}

/**
 * The patch that marks a pod the webhook saw but did not inject; none for a pod that carries the
 * mark already (a second pass of the webhook, as reinvocation makes), so that pass sends no patch.
 */
export function skipPatch(pod: PodLike, reason: SkipReason): AddOperation[] {
  if (pod.metadata?.labels?.[SKIPPED] === reason) return [];
  return metadataOps(pod, { [SKIPPED]: reason }, {});
}
