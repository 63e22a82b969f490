// Which sidecar sets a pod gets, and what each adds. A pure function of the pod, its namespace,
// its owner and the configuration; inject.ts puts the parts of every matching set, the proxy's
// among them, into the pod's one patch. A set whose selectors do not match costs a few label
// look-ups: the sets are sorted once per configuration and their parts built once per snapshot.

import type { Config } from '../config/config';
import { DEFAULT_SET, setOwnerKind } from '../config/sidecar-set';
import { isRecord, type Labels, type NamespaceMeta, type PodLike } from '../kubernetes/k8s';
import { DISABLED, setInjectKey } from '../names';
import { appliedSets, type AppliedSet } from './applied-sets';
import { PassTaken } from './pass-taken';
import { PodPorts, portKey } from './pod-ports';
import { containerNames, type Decision, type SkipReason } from './decide';
import { runsToCompletion, type Owner } from './owner';
import { nativeFor, setParts, type SetParts } from './set-parts';

/** The proxy's own opt-out key (the default set's). */
export const PROXY_INJECT_KEY = setInjectKey(DEFAULT_SET);

/** A set left out of a pod it selects, and why: told to the user as a warning. */
export interface SetSkip {
  set: string;
  reason:
    | 'opted-out'
    | 'name-collision'
    | 'job-without-native-sidecar'
    | 'namespace-unknown'
    | 'volume-missing'
    | 'host-port';
  detail: string;
}

/** The opt-out of one set (its key), by the pod's label or annotation or the namespace's annotation. */
export function setOptOut(
  key: string,
  pod: PodLike,
  namespace: NamespaceMeta | 'assume-enabled',
): string | undefined {
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
  /**
   * The names and ports the proxy takes in this pod, when it is injected: those of the revision
   * the pod gets, which may be a pinned one the configuration's check did not compare the sets
   * with.
   */
  proxy?: { names: readonly string[]; ports: readonly string[] };
}

/**
 * Whether the set's selectors choose the pod. Where the namespace's labels are not known (manual
 * injection, a standalone webhook, a namespace the webhook has not seen yet), a set with a
 * namespace selector is not added: its conflicts were judged by that selector.
 */
function selects(a: AppliedSet, input: SetMatchInput): boolean | 'namespace-unknown' {
  const kinds: readonly string[] | undefined = a.set.ownerKinds;
  if (kinds && !kinds.includes(setOwnerKind(input.owner.kind))) return false;
  if (!a.selectsPod(input.pod.metadata?.labels)) return false;
  const ns = input.namespace;
  if (ns === 'assume-enabled') return a.set.namespaceSelector ? 'namespace-unknown' : true;
  return a.selectsNamespace(ns.labels);
}

/**
 * Why the set does not choose the pods of a workload's template, or undefined when it does: the
 * same selectors and opt-out as at admission, read off the template (which the pods copy) and
 * the namespace the controller knows; and not where the webhook would leave the set out (the
 * template uses one of its names), nor where the proxy is opted out: such pods carry no proxy
 * label, so the controller's pod watches do not see them, and its waves do not roll them.
 */
export function setSelectsTemplate(
  a: AppliedSet,
  template: PodLike,
  namespace: NamespaceMeta,
  ownerKind: string,
): string | undefined {
  const { name, ownerKinds } = a.set;
  // The kind is the stamp's, as the webhook resolves the pods' owner (a Deployment's, not its ReplicaSet's).
  if (ownerKinds && !(ownerKinds as readonly string[]).includes(setOwnerKind(ownerKind)))
    return `set ${name} does not select owners of kind ${ownerKind}`;
  if (!a.selectsPod(template.metadata?.labels))
    return `set ${name}'s podSelector does not match the template's labels`;
  if (!a.selectsNamespace(namespace.labels))
    return `set ${name}'s namespaceSelector does not match namespace ${namespace.name}`;
  const names = new PodNames(template);
  // As the webhook reads the pods of a cluster that runs native sidecars.
  const beside = runsBeside(a, nativeFor(a.set, true));
  const taken = takenOf(a, names, template.metadata?.labels, beside);
  if (taken) return `the template already has ${listed(taken)}: the webhook leaves set ${name} out`;
  const refusal = hostNetworkRefusal(a, template);
  if (refusal) return `set ${name}'s ${refusal}: the webhook leaves it out`;
  const missing = a.podVolumes.filter((v) => !names.volumes.has(v));
  if (missing.length > 0)
    return `the template has no volume ${missing.join(', ')}, which set ${name} mounts: the webhook leaves it out`;
  const proxyOff = setOptOut(PROXY_INJECT_KEY, template, namespace);
  if (proxyOff) return `the proxy is opted out (${proxyOff}): set ${name} is injected, not rolled`;
  return setOptOut(a.injectKey, template, namespace);
}

/** No sets: shared, never changed. */
const NONE: { parts: SetParts[]; skipped: SetSkip[] } = { parts: [], skipped: [] };

/**
 * The set's names the pod uses already, or undefined (the common case: no allocation). A
 * volume another set adds too is not taken where the pod carries that set and has the volume
 * as the set defines it: it is theirs to share. A label alone proves nothing (the pod's author
 * writes it), and a volume of that name defined otherwise is not the set's to mount.
 */
function takenNames(
  a: AppliedSet,
  names: PodNames,
  labels: Labels | undefined,
): string[] | undefined {
  let taken: string[] | undefined;
  for (const n of a.containerNames) if (names.containers.has(n)) (taken ??= []).push(n);
  for (const n of a.volumeNames) {
    if (!names.volumes.has(n)) continue;
    const carried = a.sharedVolumes.get(n)?.some((l) => labels?.[l] !== undefined);
    if (
      !carried ||
      !holds(
        names.volume(n),
        a.set.volumes.find((v) => v.name === n),
      )
    )
      (taken ??= []).push(n);
  }
  return taken;
}

/** The set's names and ports the pod uses already, or undefined; `beside` as for PodPorts.taken. */
function takenOf(
  a: AppliedSet,
  names: PodNames,
  labels: Labels | undefined,
  beside: boolean,
): { names?: string[]; ports?: string[] } | undefined {
  const n = takenNames(a, names, labels);
  const ports = names.ports.taken(a.portSpecs, beside);
  return n || ports ? { names: n, ports } : undefined;
}

/** What takenOf found, as a warning lists it. */
const listed = (taken: { names?: string[]; ports?: string[] }): string =>
  [...(taken.names ?? []), ...(taken.ports ?? [])].join(', ');

/** Why a host-network pod cannot take the set's ports as they are written, or undefined. */
const hostNetworkRefusal = (a: AppliedSet, pod: PodLike): string | undefined =>
  pod.spec?.hostNetwork === true ? a.hostNetworkMismatch : undefined;

/**
 * The sets a pod gets, in applied order, and the ones it is selected by but does not get. A
 * set the pod already carries (its label, and its names or ports: a second pass of the webhook)
 * is neither: it is left as it is.
 */
export function matchSets(
  sets: readonly AppliedSet[],
  input: SetMatchInput,
): { parts: SetParts[]; skipped: SetSkip[] } {
  let parts: SetParts[] | undefined;
  let skipped: SetSkip[] | undefined;
  const names = new PodNames(input.pod);
  let placed: PassTaken | undefined;
  for (const a of sets) {
    const selected = selects(a, input);
    if (selected === false) continue;
    parts ??= [];
    skipped ??= [];
    if (selected === 'namespace-unknown') {
      skipped.push({
        set: a.set.name,
        reason: 'namespace-unknown',
        detail: `set ${a.set.name} not added: its namespaceSelector needs the labels of the pod's namespace, which are not known here`,
      });
      continue;
    }
    const native = nativeFor(a.set, input.nativeSidecarSupported);
    placed ??= new PassTaken(input.proxy);
    const skip = skipOf(a, input, names, native) ?? clash(placed, a);
    if (skip === undefined) {
      parts.push(setParts(a, native));
      placed.add(a);
    } else if (skip !== 'carried') skipped.push(skip);
  }
  return parts && skipped ? { parts, skipped } : NONE;
}

/** A set that another set of this pass (a pinned revision's, say) has taken from. */
function clash(placed: PassTaken, a: AppliedSet): SetSkip | undefined {
  const what = placed.taken(a);
  if (what === undefined) return undefined;
  return {
    set: a.set.name,
    reason: 'name-collision',
    detail: `set ${a.set.name} not added: it would take the ${what} in this pod; give it names and ports of its own`,
  };
}

/** The names of a pod's containers and volumes, read the first time a set asks. */
class PodNames {
  private c: Set<string> | undefined;
  private v: Set<string> | undefined;
  private p: PodPorts | undefined;
  constructor(private readonly pod: PodLike) {}
  get ports(): PodPorts {
    return (this.p ??= new PodPorts(this.pod));
  }
  get containers(): Set<string> {
    return (this.c ??= containerNames(this.pod));
  }
  get volumes(): Set<string> {
    const volumes: unknown[] = this.pod.spec?.volumes ?? [];
    return (this.v ??= new Set(
      volumes.flatMap((v) => (isRecord(v) && typeof v.name === 'string' ? [v.name] : [])),
    ));
  }
  /** The pod's volume of that name, or undefined. */
  volume(name: string): unknown {
    const volumes: unknown[] = this.pod.spec?.volumes ?? [];
    return volumes.find((x) => isRecord(x) && x.name === name);
  }
}

/**
 * Whether `have` holds everything `want` says, and may say more: a pod's volume as the API
 * server stored it has the defaults it added (a configMap's defaultMode) beside what was written.
 */
function holds(have: unknown, want: unknown): boolean {
  if (Array.isArray(want))
    return (
      Array.isArray(have) && have.length === want.length && want.every((w, i) => holds(have[i], w))
    );
  if (isRecord(want))
    return isRecord(have) && Object.entries(want).every(([k, w]) => holds(have[k], w));
  return have === want;
}

/** Whether the set's sidecars start before the app's init containers and run beside them. */
const runsBeside = (a: AppliedSet, native: boolean): boolean =>
  native && a.set.position === 'before-app';

/**
 * The set's names or ports the pod has already: a collision, or `carried` where the pod carries
 * the set (its label): a second pass, or a pod injected by hand with another revision of it.
 */
function collision(
  a: AppliedSet,
  pod: PodLike,
  names: PodNames,
  native: boolean,
): SetSkip | 'carried' | undefined {
  const taken = takenOf(a, names, pod.metadata?.labels, runsBeside(a, native));
  if (!taken) return undefined;
  if (pod.metadata?.labels?.[a.revisionLabel] !== undefined) return 'carried';
  const fix = taken.names ? 'rename it' : "change the set's port";
  return {
    set: a.set.name,
    reason: 'name-collision',
    detail: `set ${a.set.name} not added: the pod already has ${listed(taken)}; ${fix} or opt the pod out with ${a.injectKey}=${DISABLED}`,
  };
}

/** Why a set that selects the pod is not added, `carried` when the pod has it already. */
function skipOf(
  a: AppliedSet,
  input: SetMatchInput,
  names: PodNames,
  native: boolean,
): SetSkip | 'carried' | undefined {
  const { name } = a.set;
  const off = setOptOut(a.injectKey, input.pod, input.namespace);
  if (off) return { set: name, reason: 'opted-out', detail: off };
  const taken = collision(a, input.pod, names, native);
  if (taken) return taken;
  const refusal = hostNetworkRefusal(a, input.pod);
  if (refusal)
    return {
      set: name,
      reason: 'host-port',
      detail: `set ${name} not added: its ${refusal}; drop the hostPort from the set, or keep the set off the pod with ${a.injectKey}=${DISABLED}`,
    };
  const missing = a.podVolumes.filter((v) => !names.volumes.has(v));
  if (missing.length > 0)
    return {
      set: name,
      reason: 'volume-missing',
      detail: `set ${name} not added: its containers mount ${missing.join(', ')}, which the pod does not have; add the volume to the pod, or keep the set off it with ${a.injectKey}=${DISABLED}`,
    };
  if (!native && a.set.containers.length > 0 && completes(input.pod, input.owner))
    return {
      set: name,
      reason: 'job-without-native-sidecar',
      detail: `set ${name} not added: its classic sidecars would keep the ${input.owner.kind} from completing; enable native sidecars`,
    };
  return undefined;
}

function completes(pod: PodLike, owner: Owner): boolean {
  const policy = pod.spec?.restartPolicy;
  return runsToCompletion(owner) || policy === 'Never' || policy === 'OnFailure';
}

/**
 * Skips that are the proxy's alone: the other sets still decide for themselves. Not `opted-out`:
 * decide's is the pod-wide opt-out (the proxy's own is its set's).
 */
const PROXY_ONLY_REASONS: ReadonlySet<SkipReason> = new Set<SkipReason>([
  'host-network',
  'already-injected',
  'other-mesh-sidecar',
  'name-collision',
  'job-without-native-sidecar',
]);

const NO_WARNINGS: string[] = [];

const taken = new WeakMap<Config, { names: readonly string[]; ports: readonly string[] }>();

/** The names and ports the proxy of this configuration (a pinned one too) takes in a pod. */
function proxyTaken(config: Config): { names: readonly string[]; ports: readonly string[] } {
  let t = taken.get(config);
  if (!t) {
    const { inbound, outbound, admin } = config.proxy.ports;
    t = {
      names: [config.proxy.name, config.init.name],
      ports: [inbound, outbound, admin].map((n) => portKey(n, 'TCP')),
    };
    taken.set(config, t);
  }
  return t;
}

/**
 * The sets other than the proxy a pod gets, given the proxy's decision (`proxyOptedOut`: the
 * proxy's own set was opted out of), and the warnings for the ones it is selected by but cannot
 * take. Opting out is the user's word and warns of nothing.
 */
export function otherSets(
  config: Config,
  proxy: Decision,
  proxyOptedOut: boolean,
  input: SetMatchInput,
): { parts: readonly SetParts[]; warnings: string[] } {
  const sets = appliedSets(config);
  if (sets.length === 0) return { parts: NONE.parts, warnings: NO_WARNINGS };
  if (!proxy.inject && !proxyOptedOut && !PROXY_ONLY_REASONS.has(proxy.reason))
    return { parts: NONE.parts, warnings: NO_WARNINGS };
  // Spelled out, not `{ ...input, proxy }`: an object spread in optimized code costs about a
  // microsecond a property (inject.ts, injectPod).
  const { parts, skipped } = matchSets(
    sets,
    proxy.inject
      ? {
          pod: input.pod,
          namespace: input.namespace,
          owner: input.owner,
          nativeSidecarSupported: input.nativeSidecarSupported,
          proxy: proxyTaken(config),
        }
      : input,
  );
  const warnings = skipped.filter((k) => k.reason !== 'opted-out').map((k) => k.detail);
  return { parts, warnings: warnings.length === 0 ? NO_WARNINGS : warnings };
}
