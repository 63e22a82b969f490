// One set at one revision, compiled into the CEL of a MutatingAdmissionPolicy: its matchConditions
// (the pinned revision), its variables (what it decides on) and its JSON patch (what it adds).
// The proxy's decides as decide.ts does and marks the pods it skips; another set's decides as
// set-injection.ts does (selectors are its bindings', policy-objects.ts).

import { plainProxyParts, useNativeSidecar, type ConfigSnapshot } from '../admission/inject';
import { nativeFor, setParts } from '../admission/set-parts';
import type { AppliedSet } from '../admission/applied-sets';
import { hostPortKey } from '../admission/pod-ports';
import { DEFAULT_CONTAINER } from '../admission/set-patch';
import { DEFAULT_SET } from '../config/sidecar-set';
import {
  IDENTITY_VOLUME,
  OWNER_KIND,
  OWNER_NAME,
  REVISION,
  SKIPPED,
  STATUS,
  PROXY_KEYS,
  setInjectKey,
} from '../names';
import { addOp, celString, celStrings, concat, when } from './cel';
import type { Footprint, PlacedParts } from './placement';
import { specOps } from './placement';
import { isLabelValue, pinnedBy, saysDisabled, variable, type Variable } from './pod-facts';

/** Whether the pod uses the host's network. */
const HOST_NETWORK = 'object.spec.?hostNetwork.orValue(false)';

/** One set at one revision, compiled. */
export interface CompiledSet {
  readonly set: string;
  readonly revision: string;
  readonly matchConditions: readonly Variable[];
  readonly variables: readonly Variable[];
  /** The JSON patch, a CEL list of JSONPatch. */
  readonly patch: string;
}

/** What every set's policy is compiled with. */
export interface CompileContext {
  /** Every set's footprint, the proxy's among them: where each set's parts go. */
  readonly footprints: readonly Footprint[];
  /** Revisions of this set compiled beside the current one: the current one's policy takes the rest. */
  readonly pinnedElsewhere: readonly string[];
  readonly nativeSidecarSupported: boolean;
}

/**
 * Which pods the revision's policy is for: those pinned to it, or, for the current revision,
 * every pod not pinned to another revision compiled (unstamped, stamped with the current one,
 * or stamped with one the history no longer holds: the webhook's fallback).
 */
export function pinCondition(
  key: string,
  revision: string,
  current: boolean,
  elsewhere: readonly string[],
): Variable {
  const pin = pinnedBy(key);
  const expression = current
    ? elsewhere.length === 0
      ? 'true'
      : `!(${pin} in ${celStrings(elsewhere)})`
    : `${pin} == ${celString(revision)}`;
  return { name: 'pinned', expression };
}

const labels = variable('labels');
const annotations = variable('annotations');

/** The map at `path` created when the pod has none. */
const ensureMap = (field: 'labels' | 'annotations'): string =>
  when(`!has(object.metadata.${field})`, `[${addOp(['metadata', field], '{}')}]`);

/** Annotation `key` set to `value` (CEL) where the pod has none. */
const annotateIfAbsent = (key: string, value: string): string =>
  when(
    `!(${celString(key)} in ${annotations})`,
    `[${addOp(['metadata', 'annotations', key], value)}]`,
  );

/** The pod's first container that no set put there: the app's, which kubectl should pick. */
function defaultContainer(footprints: readonly Footprint[]): string {
  const ours = [...new Set(footprints.flatMap((f) => [...f.main]))].sort();
  const app = `${variable('containers')}.filter(c, !(c.name in ${celStrings(ours)}))`;
  return when(
    `size(${app}) > 0 && !(${celString(DEFAULT_CONTAINER)} in ${annotations})`,
    `[${addOp(['metadata', 'annotations', DEFAULT_CONTAINER], `${app}[0].name`)}]`,
  );
}

const own = (footprints: readonly Footprint[], set: string): Footprint => {
  const f = footprints.find((x) => x.set === set);
  if (!f) throw new Error(`no footprint for set ${set}`);
  return f;
};

/** The proxy at a revision: its parts and whether they are native sidecars. */
export function proxyPlacedParts(
  snapshot: ConfigSnapshot,
  nativeSidecarSupported: boolean,
): PlacedParts & { status: string; native: boolean } {
  const native = useNativeSidecar(snapshot.config, {}, nativeSidecarSupported);
  const parts = plainProxyParts(snapshot, native);
  return { ...parts, position: 'before-app', initLast: !native, native };
}

/** The reason the proxy skips a pod, in decide.ts's order; the empty string: it is injected. */
function skipReason(snapshot: ConfigSnapshot, native: boolean): string {
  const { proxy, init } = snapshot.config;
  const names = variable('names');
  const has = (n: string) => `${celString(n)} in ${names}`;
  const rows: [string, string][] = [
    [variable('podOptedOut'), 'opted-out'],
    [HOST_NETWORK, 'host-network'],
    [
      `${has(proxy.name)} && (${celString(REVISION)} in ${labels} || ${celString(STATUS)} in ${annotations})`,
      'already-injected',
    ],
    [variable('otherMesh'), 'other-mesh-sidecar'],
    [
      `${has(proxy.name)} || ${has(init.name)} || ${celString(IDENTITY_VOLUME)} in ${variable('volumes')}`,
      'name-collision',
    ],
    [native ? 'false' : variable('completes'), 'job-without-native-sidecar'],
    [saysDisabled(setInjectKey(DEFAULT_SET)), 'opted-out'],
  ];
  return `${rows.map(([when_, reason]) => `${when_} ? ${celString(reason)}`).join(' : ')} : ""`;
}

/** The proxy at one revision. */
export function compileProxy(
  snapshot: ConfigSnapshot,
  current: boolean,
  context: CompileContext,
): CompiledSet {
  const parts = proxyPlacedParts(snapshot, context.nativeSidecarSupported);
  const { revision } = snapshot;
  const ownerLabel = (key: string, value: string) =>
    when(isLabelValue(value), `[${addOp(['metadata', 'labels', key], value)}]`);
  const inject = concat([
    ensureMap('labels'),
    `[${addOp(['metadata', 'labels', REVISION], celString(revision))}]`,
    ownerLabel(OWNER_KIND, variable('ownerKind')),
    ownerLabel(OWNER_NAME, variable('ownerName')),
    ensureMap('annotations'),
    `[${addOp(['metadata', 'annotations', STATUS], celString(parts.status))}]`,
    annotateIfAbsent(OWNER_KIND, variable('ownerKind')),
    annotateIfAbsent(OWNER_NAME, variable('ownerName')),
    ...(parts.native ? [] : [defaultContainer(context.footprints)]),
    specOps(own(context.footprints, DEFAULT_SET), parts, context.footprints),
  ]);
  const mark = concat([
    ensureMap('labels'),
    `[${addOp(['metadata', 'labels', SKIPPED], variable('reason'))}]`,
  ]);
  const reason = variable('reason');
  return {
    set: DEFAULT_SET,
    revision,
    matchConditions: [
      pinCondition(PROXY_KEYS.configRevision, revision, current, context.pinnedElsewhere),
    ],
    variables: [
      { name: 'reason', expression: skipReason(snapshot, parts.native) },
      {
        // Every pod it sees leaves with a mark, but one injected already (admit.ts, unmarked).
        name: 'mark',
        expression: `${reason} != "already-injected" || !(${celString(REVISION)} in ${labels})`,
      },
    ],
    patch: `${reason} == "" ? ${inject} : (${variable('mark')} ? ${mark} : [])`,
  };
}

/**
 * Whether the pod has volume `name` of the set already and not from another set that adds it
 * too: set-injection.ts, takenNames.
 */
function volumeTaken(a: AppliedSet, name: string): string {
  const has = `${celString(name)} in ${variable('volumes')}`;
  const sharers = a.sharedVolumes.get(name);
  if (!sharers || sharers.length === 0) return has;
  return `(${has} && !${celStrings(sharers)}.exists(k, k in ${variable('labels')}))`;
}

/** Another set at one revision (`a`: the set as applied at that revision). */
export function compileSet(a: AppliedSet, current: boolean, context: CompileContext): CompiledSet {
  const native = nativeFor(a.set, context.nativeSidecarSupported);
  const parts = setParts(a, native);
  const names = variable('names');
  const kinds = a.set.ownerKinds;
  const taken = [
    a.containerNames.length > 0 ? `${names}.exists(n, n in ${celStrings(a.containerNames)})` : '',
    ...a.volumeNames.map((n) => volumeTaken(a, n)),
    portsTaken(a, native && a.set.position === 'before-app'),
    a.hostNetworkMismatch ? HOST_NETWORK : '',
  ].filter((x) => x !== '');
  const skipWhen = [
    variable('podOptedOut'),
    // setOwnerKind: a CronJob's is Job.
    kinds
      ? `!((${variable('ownerKind')} == "CronJob" ? "Job" : ${variable('ownerKind')}) in ${celStrings(kinds)})`
      : '',
    saysDisabled(a.injectKey),
    ...taken,
    a.podVolumes.length > 0
      ? `!${celStrings(a.podVolumes)}.all(n, n in ${variable('volumes')})`
      : '',
    !native && a.set.containers.length > 0 ? variable('completes') : '',
  ].filter((x) => x !== '');
  const marks = [
    ensureMap('labels'),
    ...Object.entries(parts.labels).map(
      ([k, val]) => `[${addOp(['metadata', 'labels', k], celString(val))}]`,
    ),
    ensureMap('annotations'),
    ...Object.entries(parts.annotations).map(
      ([k, val]) => `[${addOp(['metadata', 'annotations', k], celString(val))}]`,
    ),
  ];
  const takesFirst = a.set.position === 'before-app' && parts.containers.length > 0;
  const placed: PlacedParts = { ...parts, initLast: false };
  const patch = concat([
    ...marks,
    ...(takesFirst ? [defaultContainer(context.footprints)] : []),
    specOps(own(context.footprints, a.set.name), placed, context.footprints),
  ]);
  return {
    set: a.set.name,
    revision: a.revision,
    matchConditions: [
      pinCondition(a.keys.configRevision, a.revision, current, context.pinnedElsewhere),
    ],
    variables: [{ name: 'skip', expression: skipWhen.join(' || ') }],
    patch: `${variable('skip')} ? [] : ${patch}`,
  };
}

/**
 * Whether the pod takes one of the set's sidecars' ports already (pod-ports.ts, PodPorts.taken),
 * in one pass over the pod's ports whatever the number of the set's: the same number and
 * protocol; or a host port, at any host IP, the pod's being its hostPort or, in a host-network
 * pod, its containerPort, and the set's its hostPort or, in a host-network pod, its
 * containerPort. The app's init containers count only against sidecars that run beside them.
 */
function portsTaken(a: AppliedSet, beside: boolean): string {
  const ports = a.portSpecs.filter((p) => p.sidecar);
  if (ports.length === 0) return '';
  const initContainers = variable('initContainers');
  const running = beside
    ? initContainers
    : `${initContainers}.filter(c, c.?restartPolicy.orValue("") == "Always")`;
  const protocol = 'q.?protocol.orValue("TCP")';
  const port = 'q.?containerPort.orValue(0)';
  const podHost = `(q.?hostPort.orValue(0) != 0 ? q.hostPort : (${HOST_NETWORK} ? ${port} : 0))`;
  const hostKey = `"host " + string(${podHost}) + "/" + ${protocol}`;
  const explicit = ports.flatMap((p) => (p.host ? [p.host.key] : []));
  const implicit = ports.flatMap((p) => (p.host ? [] : [hostPortKey(p.containerPort, p.protocol)]));
  const cond = [
    `string(${port}) + "/" + ${protocol} in ${celStrings(ports.map((p) => p.key))}`,
    explicit.length > 0 ? `${hostKey} in ${celStrings(explicit)}` : '',
    implicit.length > 0 ? `(${HOST_NETWORK} && ${hostKey} in ${celStrings(implicit)})` : '',
  ].filter((x) => x !== '');
  return `(${running} + ${variable('containers')}).exists(c, c.?ports.orValue([]).exists(q, ${cond.join(' || ')}))`;
}
