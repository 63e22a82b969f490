// The admission-policy mode: every set at every revision some owner's template is pinned to, and
// at its current revision, compiled into a MutatingAdmissionPolicy and its bindings, so that the
// API server injects by itself while no Outrigger pod runs. The revision's content is written
// into the policy as literals: a revision never changes, so a parameter object would be a second
// thing to keep in step with it for nothing. The bindings choose namespaces and pods as the
// webhook configuration does: opted-in namespaces by the label the controller mirrors, and pods
// that opt in by their own label elsewhere; a set's selectors narrow them.

import type { ConfigSnapshot } from '../admission/inject';
import type { HeldSets } from '../admission/pinned-sets';
import { appliedSets, type AppliedSet } from '../admission/applied-sets';
import { DEFAULT_SET } from '../config/sidecar-set';
import type { LabelSelector, SelectorRequirement } from '../kubernetes/selector';
import { ENABLED, INJECT, INJECTION_LABEL, KUBERNETES_SYSTEM_NAMESPACES } from '../names';
import { footprint, type Footprint } from './placement';
import { OVERRIDDEN, POD_VARIABLES } from './pod-facts';
import {
  compileProxy,
  compileSet,
  proxyPlacedParts,
  type CompileContext,
  type CompiledSet,
} from './set-policies';
import { setParts, nativeFor } from '../admission/set-parts';

/** The API versions that serve MutatingAdmissionPolicy, newest first. */
export const POLICY_API_VERSIONS = [
  'admissionregistration.k8s.io/v1',
  'admissionregistration.k8s.io/v1beta1',
] as const;
export type PolicyApiVersion = (typeof POLICY_API_VERSIONS)[number];

/** The label on every policy and binding the controller keeps: what it lists and may delete. */
export const POLICY_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const POLICY_MANAGER = 'outrigger-controller';
export const POLICY_SET_LABEL = 'outrigger.dev/set';
export const POLICY_REVISION_LABEL = 'outrigger.dev/revision';

export type PolicyMode = 'policy' | 'both';

export interface PolicyInput {
  current: ConfigSnapshot;
  /** The proxy's revisions owners are pinned to that the history holds, as snapshots. */
  pinned: ReadonlyMap<string, ConfigSnapshot>;
  /** The sets' revisions owners are pinned to that the history holds. */
  pinnedSets: HeldSets;
  nativeSidecarSupported: boolean;
  systemNamespace: string;
  /** `both`: pods that ask for overrides are left to the webhook; `policy`: injected without them. */
  mode: PolicyMode;
  apiVersion: PolicyApiVersion;
  failurePolicy: 'Fail' | 'Ignore';
}

export interface PolicyObject {
  apiVersion: string;
  kind: 'MutatingAdmissionPolicy' | 'MutatingAdmissionPolicyBinding';
  metadata: {
    name: string;
    labels: Record<string, string>;
    /** Set by the controller: what the garbage collector deletes them with. */
    ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
  };
  spec: Record<string, unknown>;
}

/** A policy's name: the set's and the revision's (both DNS labels). */
export const policyName = (set: string, revision: string): string => `outrigger-${set}-${revision}`;

interface Unit {
  compile: (context: CompileContext) => CompiledSet;
  set: string;
  revision: string;
  current: boolean;
}

/** The proxy's units (the current revision and each pinned one) and its footprint. */
function proxyUnits(input: PolicyInput): { units: Unit[]; footprint: Footprint } {
  const snapshots = [
    input.current,
    ...[...input.pinned.values()].filter((s) => s.revision !== input.current.revision),
  ];
  const units = snapshots.map((s) => ({
    set: DEFAULT_SET,
    revision: s.revision,
    current: s === input.current,
    compile: (c: CompileContext) => compileProxy(s, s === input.current, c),
  }));
  const parts = snapshots.map((s) => proxyPlacedParts(s, input.nativeSidecarSupported));
  const order = { name: DEFAULT_SET, order: 0, position: 'before-app' as const };
  return { units, footprint: footprint(order, parts) };
}

/** Each other set's units and footprint. */
function setUnits(input: PolicyInput): { units: Unit[]; footprints: Footprint[] } {
  const units: Unit[] = [];
  const footprints: Footprint[] = [];
  for (const a of appliedSets(input.current.config)) {
    const revisions: AppliedSet[] = [a];
    for (const [revision, content] of input.pinnedSets.get(a.set.name) ?? []) {
      if (revision === a.revision) continue;
      const pinned = appliedSets({ ...input.current.config, sets: [{ ...a.set, ...content }] })[0];
      if (pinned) revisions.push(pinned);
    }
    for (const r of revisions)
      units.push({
        set: a.set.name,
        revision: r.revision,
        current: r === a,
        compile: (c) => compileSet(r, r === a, c),
      });
    const parts = revisions.map((r) => ({
      ...setParts(r, nativeFor(r.set, input.nativeSidecarSupported)),
      initLast: false,
    }));
    footprints.push(footprint(a.set, parts));
  }
  return { units, footprints };
}

/** Every policy and binding the input asks for, policies first. */
export function compilePolicies(input: PolicyInput): PolicyObject[] {
  const proxy = proxyUnits(input);
  const sets = setUnits(input);
  const footprints = [proxy.footprint, ...sets.footprints];
  const units = [...proxy.units, ...sets.units];
  const policies: PolicyObject[] = [];
  const bindings: PolicyObject[] = [];
  for (const unit of units) {
    const elsewhere = units
      .filter((u) => u.set === unit.set && u.revision !== unit.revision)
      .map((u) => u.revision)
      .sort();
    const compiled = unit.compile({
      footprints,
      pinnedElsewhere: unit.current ? elsewhere : [],
      nativeSidecarSupported: input.nativeSidecarSupported,
    });
    policies.push(policyObject(input, compiled));
    const set = input.current.config.sets.find((s) => s.name === unit.set);
    bindings.push(...bindingObjects(input, compiled, set));
  }
  return [...policies, ...bindings];
}

function labelsOf(compiled: CompiledSet): Record<string, string> {
  return {
    [POLICY_MANAGED_BY]: POLICY_MANAGER,
    [POLICY_SET_LABEL]: compiled.set,
    [POLICY_REVISION_LABEL]: compiled.revision,
  };
}

function policyObject(input: PolicyInput, compiled: CompiledSet): PolicyObject {
  const matchConditions = [...compiled.matchConditions];
  if (input.mode === 'both')
    matchConditions.push({ name: 'no-overrides', expression: `!(${OVERRIDDEN})` });
  return {
    apiVersion: input.apiVersion,
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: policyName(compiled.set, compiled.revision), labels: labelsOf(compiled) },
    spec: {
      failurePolicy: input.failurePolicy,
      reinvocationPolicy: 'IfNeeded',
      matchConstraints: {
        resourceRules: [
          {
            apiGroups: [''],
            apiVersions: ['v1'],
            operations: ['CREATE'],
            resources: ['pods'],
            scope: 'Namespaced',
          },
        ],
      },
      matchConditions,
      variables: [...POD_VARIABLES, ...compiled.variables],
      mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: compiled.patch } }],
    },
  };
}

/** A selector's matchLabels as requirements, so that two selectors can be joined. */
const requirements = (s: LabelSelector | undefined): SelectorRequirement[] => [
  ...Object.entries(s?.matchLabels ?? {}).map(([key, value]) => ({
    key,
    operator: 'In' as const,
    values: [value],
  })),
  ...(s?.matchExpressions ?? []),
];

/** The namespaces the webhook configuration leaves out, by name. */
function notExcluded(input: PolicyInput): SelectorRequirement {
  const names = new Set([
    input.systemNamespace,
    ...KUBERNETES_SYSTEM_NAMESPACES,
    ...input.current.config.excludeNamespaces,
  ]);
  return { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...names].sort() };
}

/**
 * The policy's two bindings, as the webhook configuration's two pod entries: opted-in namespaces,
 * and pods that opt in by their label in the others.
 */
function bindingObjects(
  input: PolicyInput,
  compiled: CompiledSet,
  set: { namespaceSelector?: LabelSelector; podSelector?: LabelSelector } | undefined,
): PolicyObject[] {
  const name = policyName(compiled.set, compiled.revision);
  const namespaces = [notExcluded(input), ...requirements(set?.namespaceSelector)];
  const pods = requirements(set?.podSelector);
  const binding = (suffix: string, matchResources: Record<string, unknown>): PolicyObject => ({
    apiVersion: input.apiVersion,
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: `${name}${suffix}`, labels: labelsOf(compiled) },
    spec: { policyName: name, matchResources },
  });
  const selector = (expressions: SelectorRequirement[]) => ({ matchExpressions: expressions });
  return [
    binding('', {
      namespaceSelector: selector([
        { key: INJECTION_LABEL, operator: 'In', values: [ENABLED] },
        ...namespaces,
      ]),
      objectSelector: selector(pods),
    }),
    binding('-opt-in', {
      namespaceSelector: selector([
        { key: INJECTION_LABEL, operator: 'NotIn', values: [ENABLED] },
        ...namespaces,
      ]),
      objectSelector: selector([{ key: INJECT, operator: 'In', values: [ENABLED] }, ...pods]),
    }),
  ];
}
