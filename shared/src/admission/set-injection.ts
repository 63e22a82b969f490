// Which sidecar sets a pod gets, and what each adds. A pure function of the pod, its namespace,
// its owner and the configuration; inject.ts puts the parts of every matching set, the proxy's
// among them, into the pod's one patch. A set whose selectors do not match costs a few label
// look-ups: the sets are sorted once per configuration and their parts built once per snapshot.

import type { Config } from '../config/config';
import { setRevision } from '../config/revision';
import { compareSets, type SidecarSetConfig } from '../config/sidecar-set';
import {
  deepFreeze,
  type Container,
  type NamespaceMeta,
  type PodLike,
  type Volume,
} from '../kubernetes/k8s';
import { matchesSelector } from '../kubernetes/selector';
import { DISABLED, setInjectKey, setRevisionLabel, setStatusAnnotation } from '../names';
import { runsToCompletion, type Owner } from './owner';
import { registerFragment } from './patch';

/** A set as applied: its configuration, its revision, in applied order. */
export interface AppliedSet {
  readonly set: SidecarSetConfig;
  readonly revision: string;
}

/** What one set adds to a pod; frozen, shared by every pod it matches. */
export interface SetParts {
  readonly name: string;
  readonly order: number;
  readonly position: 'before-app' | 'after-app';
  readonly initContainers: readonly Container[];
  readonly containers: readonly Container[];
  readonly volumes: readonly Volume[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** A set left out of a pod it selects, and why: told to the user as a warning. */
export interface SetSkip {
  set: string;
  reason: 'opted-out' | 'name-collision' | 'job-without-native-sidecar';
  detail: string;
}

const applied = new WeakMap<Config, readonly AppliedSet[]>();

/** The configuration's sets in applied order (order, then name), each with its revision. */
export function appliedSets(config: Config): readonly AppliedSet[] {
  let sets = applied.get(config);
  if (!sets) {
    sets = [...config.sets]
      .sort(compareSets)
      .map((set) => Object.freeze({ set, revision: setRevision(set) }));
    applied.set(config, sets);
  }
  return sets;
}

/** The opt-out of one set, by the pod's label or annotation or the namespace's annotation. */
export function setOptOut(
  set: string,
  pod: PodLike,
  namespace: NamespaceMeta | 'assume-enabled',
): string | undefined {
  const key = setInjectKey(set);
  const meta = pod.metadata ?? {};
  if (meta.labels?.[key] === DISABLED) return `label ${key}=${DISABLED}`;
  if (meta.annotations?.[key] === DISABLED) return `annotation ${key}=${DISABLED}`;
  if (namespace !== 'assume-enabled' && namespace.annotations?.[key] === DISABLED)
    return `namespace ${namespace.name} annotated ${key}=${DISABLED}`;
  return undefined;
}

export interface SetMatchInput {
  pod: PodLike;
  namespace: NamespaceMeta | 'assume-enabled';
  owner: Owner;
  nativeSidecarSupported: boolean;
  /** The names of the pod's containers and init containers. */
  containerNames: ReadonlySet<string>;
}

/** Whether the set's selectors choose the pod; a namespace not known is taken to match. */
function selects(set: SidecarSetConfig, input: SetMatchInput): boolean {
  if (set.ownerKinds && !(set.ownerKinds as readonly string[]).includes(input.owner.kind))
    return false;
  if (set.podSelector && !matchesSelector(set.podSelector, input.pod.metadata?.labels))
    return false;
  const ns = input.namespace;
  return (
    !set.namespaceSelector ||
    ns === 'assume-enabled' ||
    matchesSelector(set.namespaceSelector, ns.labels)
  );
}

const nativeFor = (set: SidecarSetConfig, supported: boolean): boolean =>
  set.nativeSidecar === 'auto' ? supported : set.nativeSidecar === 'true';

/**
 * The sets a pod gets, in applied order, and the ones it is selected by but does not get. A
 * set the pod already carries (its label and its containers: a second pass of the webhook) is
 * neither: it is left as it is.
 */
export function matchSets(
  sets: readonly AppliedSet[],
  input: SetMatchInput,
): { parts: SetParts[]; skipped: SetSkip[] } {
  const parts: SetParts[] = [];
  const skipped: SetSkip[] = [];
  for (const a of sets) {
    const { set } = a;
    if (!selects(set, input)) continue;
    const off = setOptOut(set.name, input.pod, input.namespace);
    if (off) {
      skipped.push({ set: set.name, reason: 'opted-out', detail: off });
      continue;
    }
    const names = [...set.initContainers, ...set.containers].map((c) => c.name);
    const present = names.filter((n) => input.containerNames.has(n));
    const volumes = new Set((input.pod.spec?.volumes ?? []).map((v) => v.name));
    const taken = [...present, ...set.volumes.map((v) => v.name).filter((n) => volumes.has(n))];
    if (taken.length > 0) {
      const carried =
        input.pod.metadata?.labels?.[setRevisionLabel(set.name)] !== undefined &&
        present.length === names.length;
      if (!carried)
        skipped.push({
          set: set.name,
          reason: 'name-collision',
          detail: `set ${set.name} not added: the pod already has ${taken.join(', ')}; rename it or opt the pod out with ${setInjectKey(set.name)}=${DISABLED}`,
        });
      continue;
    }
    const native = nativeFor(set, input.nativeSidecarSupported);
    if (!native && set.containers.length > 0 && completes(input.pod, input.owner)) {
      skipped.push({
        set: set.name,
        reason: 'job-without-native-sidecar',
        detail: `set ${set.name} not added: its classic sidecars would keep the ${input.owner.kind} from completing; enable native sidecars`,
      });
      continue;
    }
    parts.push(setParts(a, native));
  }
  return { parts, skipped };
}

function completes(pod: PodLike, owner: Owner): boolean {
  const policy = pod.spec?.restartPolicy;
  return runsToCompletion(owner) || policy === 'Never' || policy === 'OnFailure';
}

const partsOf = new WeakMap<AppliedSet, { native?: SetParts; classic?: SetParts }>();

/** The set's parts, built once per applied set and per kind of sidecar. */
function setParts(a: AppliedSet, native: boolean): SetParts {
  let both = partsOf.get(a);
  if (!both) partsOf.set(a, (both = {}));
  const known = native ? both.native : both.classic;
  if (known) return known;
  const built = buildSetParts(a, native);
  if (native) both.native = built;
  else both.classic = built;
  return built;
}

function buildSetParts({ set, revision }: AppliedSet, native: boolean): SetParts {
  const frozen = <T extends object>(v: T): T => registerFragment(deepFreeze(v));
  const init = set.initContainers.map((c) => frozen({ ...c }));
  const sidecars = set.containers.map((c) =>
    frozen(native ? { ...c, restartPolicy: 'Always' } : { ...c }),
  );
  const initContainers = native ? [...init, ...sidecars] : init;
  const containers = native ? [] : sidecars;
  const volumes = set.volumes.map((v) => frozen({ ...v }));
  const status = JSON.stringify({
    revision,
    initContainers: initContainers.map((c) => c.name),
    containers: containers.map((c) => c.name),
    volumes: volumes.map((v) => v.name),
  });
  return Object.freeze({
    name: set.name,
    order: set.order,
    position: set.position,
    initContainers,
    containers,
    volumes,
    labels: Object.freeze({ [setRevisionLabel(set.name)]: revision }),
    annotations: Object.freeze({ [setStatusAnnotation(set.name)]: status }),
  });
}
