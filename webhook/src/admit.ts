// What the webhook answers, as a function of one request and one immutable state snapshot:
// no I/O, no clock. The server measures, logs and counts around it.

import {
  CONFIG_REVISION,
  REVISION,
  chooseRevision,
  choosePinnedSets,
  injectPod,
  setFallbackWarning,
  setSelectsTemplate,
  setStampAnnotations,
  templateOf,
  withSetStamps,
  appliedSets,
  type HeldSets,
  type SetStampWanted,
  readStamp,
  isRecord,
  isStampedKind,
  admissionStampPatch,
  skipPatch,
  isNamespaceEnabled,
  type ConfigSnapshot,
  type KubeObject,
  type NamespaceMeta,
  type PodLike,
  type InjectionResult,
  type RevisionChoice,
  type SkipReason,
} from '@outrigger/shared';
import { allow, type AdmissionRequest, type AdmissionResponse } from './review';

/** Everything admission reads, replaced whole by the watchers, never mutated. */
export interface AdmissionState {
  readonly snapshot: ConfigSnapshot;
  /**
   * The revisions of the history but the current one, each as the current configuration with
   * that revision's injection part: what pods pinned to it get. Absent standalone.
   */
  readonly pinned?: ReadonlyMap<string, ConfigSnapshot>;
  /** The sidecar sets' revisions the history holds, for pods pinned to one. Absent standalone. */
  readonly pinnedSets?: HeldSets;
  /** Namespace metadata by name; undefined when running standalone, without the API. */
  readonly namespaces: ReadonlyMap<string, NamespaceMeta> | undefined;
  readonly nativeSidecarSupported: boolean;
  readonly systemNamespace: string;
}

export type Endpoint = 'pods' | 'workloads';

/** The outcome of one admission, for metrics and logs. */
export type Outcome =
  | { outcome: 'injected'; reason: 'injected' }
  | { outcome: 'skipped'; reason: SkipReason }
  | { outcome: 'stamped'; reason: 'stamped' }
  | { outcome: 'unchanged'; reason: 'not-handled' | 'stamp-current' | 'namespace-not-enabled' };

export interface Admission {
  response: AdmissionResponse;
  result: Outcome;
  /** The owner as the pod names it, for logs. */
  owner?: string;
  /** Which revision rule gave the pod its configuration (pods only). */
  revision?: { rule: RevisionChoice['rule']; revision: string; requested?: string };
  /** The sidecar sets the pod was given, `proxy` among them unless it was skipped alone. */
  sets?: readonly string[];
}

const notHandled = (uid: string): Admission => ({
  response: allow(uid),
  result: { outcome: 'unchanged', reason: 'not-handled' },
});

function namespaceOf(
  state: AdmissionState,
  name: string | undefined,
): NamespaceMeta | 'assume-enabled' {
  // Standalone, or a namespace the cache has not seen yet: the webhook configuration's
  // namespaceSelector already let only opted-in namespaces through.
  if (name === undefined || state.namespaces === undefined) return 'assume-enabled';
  return state.namespaces.get(name) ?? 'assume-enabled';
}

/** A Pod's CREATE, the one request the pods endpoint mutates. */
const isPodCreate = (req: AdmissionRequest): boolean =>
  req.kind.kind === 'Pod' &&
  req.kind.group === '' &&
  req.operation === 'CREATE' &&
  !req.subResource &&
  req.object !== undefined &&
  req.object !== null;

/**
 * Admits a pod. `requested` is the revision its template asks for (requestedRevision), which
 * answerBody has read already to know whether it must fetch it first.
 */
export function admitPod(
  req: AdmissionRequest,
  state: AdmissionState,
  requested: string | undefined = requestedRevision(req),
): Admission {
  if (!isPodCreate(req)) return notHandled(req.uid);
  const pod = req.object as PodLike;
  const choice = chooseRevision(requested, state.snapshot, (r) => state.pinned?.get(r));
  const sets = choosePinnedSets(choice.snapshot, controlledAnnotations(req), state.pinnedSets);
  const injection = injectPod({
    pod,
    snapshot: sets.snapshot,
    namespaceName: req.namespace ?? pod.metadata?.namespace,
    namespace: namespaceOf(state, req.namespace),
    nativeSidecarSupported: state.nativeSidecarSupported,
    systemNamespace: state.systemNamespace,
  });
  const result =
    sets.fallbacks.length === 0
      ? injection
      : {
          ...injection,
          warnings: [...injection.warnings, ...sets.fallbacks.map(setFallbackWarning)],
        };
  const owner = `${result.owner.kind}/${result.owner.name}`;
  if (result.injected) return injected(req.uid, result, choice, owner);
  // Every pod the webhook sees leaves with a mark, so the controller can tell a skipped pod
  // from one that escaped; except system namespaces, which are never mutated at all, pods the
  // webhook cannot make sense of, which are left exactly as they came, and pods injected
  // already, which carry their revision (a second pass changes nothing).
  const mark =
    isRecord(pod.metadata) && !unmarked(pod, result.reason) ? skipPatch(pod, result.reason) : [];
  return {
    response: allow(req.uid, mark, result.warnings),
    result: { outcome: 'skipped', reason: result.reason },
    owner,
  };
}

/** Skips that leave the pod as it came. */
const unmarked = (pod: PodLike, reason: SkipReason): boolean =>
  reason === 'system-namespace' ||
  reason === 'invalid-pod-spec' ||
  (reason === 'already-injected' && pod.metadata?.labels?.[REVISION] !== undefined);

function injected(
  uid: string,
  result: Extract<InjectionResult, { injected: true }>,
  choice: RevisionChoice,
  owner: string,
): Admission {
  const revision = {
    rule: choice.rule,
    revision: choice.snapshot.revision,
    ...(choice.rule === 'fallback' ? { requested: choice.requested } : {}),
  };
  const warnings =
    choice.rule === 'fallback' ? [...result.warnings, fallbackWarning(choice)] : result.warnings;
  return {
    response: allow(uid, result.patch, warnings),
    result: { outcome: 'injected', reason: 'injected' },
    owner,
    revision,
    sets: result.sets,
  };
}

function fallbackWarning(choice: Extract<RevisionChoice, { rule: 'fallback' }>): string {
  return `the pod template is pinned to configuration revision ${choice.requested}, which the revision history no longer holds; injected with the current revision ${choice.snapshot.revision} (raise rollout.history to keep more revisions)`;
}

function isWorkloadWrite(req: AdmissionRequest): req is AdmissionRequest & { object: KubeObject } {
  const write = req.operation === 'CREATE' || req.operation === 'UPDATE';
  return (
    req.kind.group === 'apps' &&
    isStampedKind(req.kind.kind) &&
    write &&
    !req.subResource &&
    req.object !== undefined
  );
}

export function admitWorkload(req: AdmissionRequest, state: AdmissionState): Admission {
  if (!isWorkloadWrite(req)) return notHandled(req.uid);
  const ns = namespaceOf(state, req.namespace);
  if (ns !== 'assume-enabled' && !isNamespaceEnabled(ns))
    return {
      response: allow(req.uid),
      result: { outcome: 'unchanged', reason: 'namespace-not-enabled' },
    };
  const name = req.object.metadata?.name ?? req.name;
  // Without a name yet (generateName) there is no owner to stamp; the controller stamps it later.
  if (!name) return notHandled(req.uid);
  const object = { ...req.object, kind: req.kind.kind, metadata: { ...req.object.metadata, name } };
  const old = req.operation === 'UPDATE' ? req.oldObject : undefined;
  const proxy = admissionStampPatch(object, old, stampRevision(old, state));
  const sets = setStampAnnotations(object, old, wantedSetStamps(object, ns, state));
  const patch = withSetStamps(proxy, object, sets);
  if (patch.length === 0)
    return { response: allow(req.uid), result: { outcome: 'unchanged', reason: 'stamp-current' } };
  return { response: allow(req.uid, patch), result: { outcome: 'stamped', reason: 'stamped' } };
}

/**
 * The revision a workload write is stamped with: the current one, except that an update of an
 * owner pinned to a revision the history still holds keeps it. The user's own change rolls the
 * owner anyway; the wave, not that change, decides when it moves to a new proxy.
 */
function stampRevision(old: KubeObject | undefined, state: AdmissionState): string {
  const pinned = old ? readStamp(old)?.revision : undefined;
  return pinned !== undefined && state.pinned?.has(pinned) ? pinned : state.snapshot.revision;
}

/**
 * The sets whose stamp the workload's template should carry: those that select its pods. Where
 * the namespace is not known, a set with a namespace selector is left to the controller, as the
 * webhook leaves it out of the pods.
 */
function wantedSetStamps(
  workload: KubeObject,
  ns: NamespaceMeta | 'assume-enabled',
  state: AdmissionState,
): SetStampWanted[] {
  const sets = appliedSets(state.snapshot.config);
  const template = templateOf(workload);
  if (sets.length === 0 || !template) return [];
  const name = workload.metadata?.namespace ?? '';
  const namespace = ns === 'assume-enabled' ? { name, labels: {}, annotations: {} } : ns;
  return sets.flatMap((a) => {
    if (ns === 'assume-enabled' && a.set.namespaceSelector) return [];
    if (setSelectsTemplate(a, template, namespace, workload.kind ?? '') !== undefined) return [];
    const held = state.pinnedSets?.get(a.set.name);
    return [
      { key: a.keys.configRevision, revision: a.revision, held: (r) => held?.has(r) ?? false },
    ];
  });
}

/** The annotations of a pod a controller made from a template, which may pin its sets. */
function controlledAnnotations(req: AdmissionRequest): Record<string, string> | undefined {
  const meta = req.object?.metadata;
  const owners: unknown = meta?.ownerReferences;
  const controlled =
    Array.isArray(owners) && owners.some((o) => isRecord(o) && o.controller === true);
  const annotations = meta?.annotations;
  return controlled && isRecord(annotations) ? annotations : undefined;
}

/**
 * The revision a pod's stamped template asks for, if any. Only a pod a controller made from a
 * template (a ReplicaSet's, a StatefulSet's, a DaemonSet's) is pinned: a bare pod's annotation
 * is its creator's word alone, and it gets the current revision.
 */
export function requestedRevision(req: AdmissionRequest): string | undefined {
  const value = controlledAnnotations(req)?.[CONFIG_REVISION];
  return typeof value === 'string' && value !== '' ? value : undefined;
}
