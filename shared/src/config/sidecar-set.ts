// A sidecar set: a named unit of injection beside the proxy, with its own selectors, its
// containers (native sidecars or classic ones), init containers and volumes, and its place among
// the app's containers and the other sets (docs/configuration.md, "sets"). The proxy and its init
// container are the default set, named `proxy`, kept where a configuration written before sets
// has them (.proxy, .init); the sets of `.sets` come after it.

import { isRecord, type Container, type Volume } from '../kubernetes/k8s';
import { labelSelector, type LabelSelector } from '../kubernetes/selector';
import { setContainer } from './container-fields';
import { volume } from './volume-source';
import { setRolloutSchema, type SetRolloutConfig } from './rollout-config';
import { describe, dnsLabel, int, list, oneOf, struct, Reader, type Field } from './schema';

/** The name of the default set: the proxy and its init container. */
export const DEFAULT_SET = 'proxy';
/** The default set's order: before any set that does not say otherwise. */
export const DEFAULT_SET_ORDER = 0;
/** A set's order when it gives none. */
export const SET_ORDER_DEFAULT = 100;
/**
 * Bounds on what a configuration may hold: the conflict check compares every pair of sets that
 * can meet, and runs in the watch of both components, so a ConfigMap of thousands of sets must
 * be refused, not checked for seconds.
 */
export const MAX_SETS = 64;
export const MAX_SET_PARTS = 16;

export const SET_POSITIONS = ['before-app', 'after-app'] as const;
export type SetPosition = (typeof SET_POSITIONS)[number];
export const SET_NATIVE_MODES = ['auto', 'true', 'false'] as const;
export type SetNativeMode = (typeof SET_NATIVE_MODES)[number];

/**
 * The kinds of owner a set may be limited to, as Outrigger resolves a pod's owner (owner.ts): a
 * Deployment's pods belong to the Deployment, a CronJob's to its Job; a bare Pod has kind Pod.
 */
export const SET_OWNER_KINDS = [
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'Job',
  'Pod',
] as const;
export type SetOwnerKind = (typeof SET_OWNER_KINDS)[number];

/**
 * The kind `ownerKinds` knows an owner by: a CronJob's is Job, as its pods belong to its Jobs (a
 * template injected by hand, or a pod stamped from one, names the CronJob).
 */
export const setOwnerKind = (kind: string): string => (kind === 'CronJob' ? 'Job' : kind);

export interface SidecarSetConfig {
  name: string;
  /** Sets are applied by order, then by name; the proxy's order is 0. */
  order: number;
  /** Only pods in namespaces whose labels match; absent: every opted-in namespace. */
  namespaceSelector?: LabelSelector;
  /** Only pods whose labels match; absent: every pod. */
  podSelector?: LabelSelector;
  /** Only pods of these kinds of owner; absent: every kind. */
  ownerKinds?: SetOwnerKind[];
  /** Long-running sidecars: native sidecars (init containers that keep running) where possible. */
  containers: Container[];
  /** Containers that run to completion before the app's, in order. */
  initContainers: Container[];
  volumes: Volume[];
  /** Whether the containers are native sidecars: `auto` where the cluster runs them. */
  nativeSidecar: SetNativeMode;
  /** Before the app's containers (and init containers), or after them. */
  position: SetPosition;
  /** Its own rollout settings; each left out is the configuration's (rollout-config.ts). */
  rollout?: SetRolloutConfig;
}

const setName: Field<string> = (r, v, p) => {
  const name = dnsLabel(40)(r, v, p);
  if (name === DEFAULT_SET)
    return r.fail(
      p,
      `"${DEFAULT_SET}" is the default set's name (.proxy and .init); choose another`,
    );
  return name;
};

export const sidecarSetSchema: Field<SidecarSetConfig> = (r, v, p) => {
  if (!isRecord(v)) return r.fail(p, `must be a set (a mapping with a name); got ${describe(v)}`);
  const set = struct<SidecarSetConfig>({
    name: { read: setName },
    order: { read: int(-1000, 1000), default: SET_ORDER_DEFAULT },
    namespaceSelector: { read: labelSelector },
    podSelector: { read: labelSelector },
    ownerKinds: { read: list(oneOf(SET_OWNER_KINDS)) },
    containers: { read: list(setContainer(false)), default: [] },
    initContainers: { read: list(setContainer(true)), default: [] },
    volumes: { read: list(volume), default: [] },
    nativeSidecar: { read: oneOf(SET_NATIVE_MODES), default: 'auto' },
    position: { read: oneOf(SET_POSITIONS), default: 'before-app' },
    rollout: { read: setRolloutSchema },
  })(r, v, p);
  if (!set) return undefined;
  if (isRecord(v) && (v.name === undefined || v.name === null))
    return r.fail([...p, 'name'], 'is required: every set has a name');
  if (set.name === undefined) return undefined;
  checkParts(r, set, p);
  checkSelectors(r, set, p);
  return set;
};

/**
 * One set read alone, by its schema, without the configuration's cross checks (the conflicts
 * with the proxy and the other sets, which are the configuration's in force): how a set's
 * revision history entry is read back. Undefined when it is not a valid set.
 */
export function readSidecarSet(value: unknown): SidecarSetConfig | undefined {
  const r = new Reader();
  const set = sidecarSetSchema(r, value, []);
  return r.issues.length === 0 ? set : undefined;
}

/** What a set adds: something, and not more than the bounds. */
function checkParts(r: Reader, set: SidecarSetConfig, p: (string | number)[]): void {
  // A list that failed to read is absent here, its error recorded already.
  set.containers ??= [];
  set.initContainers ??= [];
  set.volumes ??= [];
  if (set.containers.length + set.initContainers.length === 0)
    r.fail(p, `set ${set.name} must add at least one container or init container`);
  for (const field of ['containers', 'initContainers', 'volumes'] as const)
    if (set[field].length > MAX_SET_PARTS)
      r.fail(
        [...p, field],
        `a set may add at most ${MAX_SET_PARTS} ${field}; got ${set[field].length}`,
      );
}

/** Which pods a set selects: kinds named once, and never by the labels injection adds. */
function checkSelectors(r: Reader, set: SidecarSetConfig, p: (string | number)[]): void {
  if (set.ownerKinds?.length === 0)
    r.fail([...p, 'ownerKinds'], 'must name at least one kind, or be left out for every kind');
  if (set.ownerKinds && new Set(set.ownerKinds).size !== set.ownerKinds.length)
    r.fail([...p, 'ownerKinds'], 'names a kind twice');
  for (const key of selectorKeys(set.podSelector))
    if (INJECTED_LABEL.test(key))
      r.fail(
        [...p, 'podSelector'],
        `selects on ${key}, a label injection itself adds: a second look at the pod would decide otherwise; select on the app's own labels`,
      );
}

/** The labels injection adds to a pod: a set may not select on them. */
const INJECTED_LABEL =
  /^(outrigger\.dev\/(revision|owner-kind|owner-name|skipped|stamped)|[a-z0-9-]+\.sets\.outrigger\.dev\/revision)$/;

function selectorKeys(selector: LabelSelector | undefined): string[] {
  return [
    ...Object.keys(selector?.matchLabels ?? {}),
    ...(selector?.matchExpressions ?? []).map((e) => e.key),
  ];
}

/** Applied order: by order, then by name (the proxy's place is DEFAULT_SET_ORDER). */
export function compareSets(
  a: { order: number; name: string },
  b: { order: number; name: string },
): number {
  return a.order - b.order || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
