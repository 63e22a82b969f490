// What the admission-policy compiler makes of a configuration and its pins: one policy and two
// bindings per set and revision, named and labelled for the controller to find, choosing
// namespaces and pods as the webhook configuration does, each pinned revision's pods going to its
// own policy. What the policies do to pods is compared with the webhook on a real API server
// (e2e/test/admission-policy-golden.test.ts).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  DEFAULT_CONFIG_YAML,
  appliedSets,
  compilePolicies,
  makeSnapshot,
  mustParseConfig,
  pinnedSnapshot,
  policyName,
  revisionContent,
  type PolicyInput,
  type PolicyObject,
} from '../src';

const CASES = join(__dirname, '..', 'testdata', 'cases');
const config = (yaml: string) => makeSnapshot(mustParseConfig(yaml));

function input(over: Partial<PolicyInput> = {}): PolicyInput {
  return {
    current: config(DEFAULT_CONFIG_YAML),
    pinned: new Map(),
    pinnedSets: new Map(),
    nativeSidecarSupported: true,
    systemNamespace: 'outrigger-system',
    mode: 'policy',
    apiVersion: 'admissionregistration.k8s.io/v1beta1',
    failurePolicy: 'Fail',
    ...over,
  };
}

const policies = (objects: PolicyObject[]) =>
  objects.filter((o) => o.kind === 'MutatingAdmissionPolicy');
const bindings = (objects: PolicyObject[]) =>
  objects.filter((o) => o.kind === 'MutatingAdmissionPolicyBinding');
const conditions = (p: PolicyObject) =>
  (p.spec.matchConditions as { name: string; expression: string }[]).map((c) => c.expression);
const selector = (b: PolicyObject, field: 'namespaceSelector' | 'objectSelector') =>
  (b.spec.matchResources as Record<string, { matchExpressions: unknown[] }>)[field]
    ?.matchExpressions;

describe('compilePolicies', () => {
  it('compiles the proxy at its revision into one policy and the two bindings of the webhook configuration', () => {
    const i = input();
    const objects = compilePolicies(i);
    const name = policyName('proxy', i.current.revision);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      `MutatingAdmissionPolicy/${name}`,
      `MutatingAdmissionPolicyBinding/${name}`,
      `MutatingAdmissionPolicyBinding/${name}-opt-in`,
    ]);
    for (const o of objects)
      expect(o.metadata.labels).toEqual({
        'app.kubernetes.io/managed-by': 'outrigger-controller',
        'outrigger.dev/set': 'proxy',
        'outrigger.dev/revision': i.current.revision,
      });
    const [optedIn, optIn] = bindings(objects);
    expect(selector(optedIn as PolicyObject, 'namespaceSelector')).toEqual([
      { key: 'outrigger.dev/injection', operator: 'In', values: ['enabled'] },
      {
        key: 'kubernetes.io/metadata.name',
        operator: 'NotIn',
        values: ['kube-node-lease', 'kube-public', 'kube-system', 'outrigger-system'],
      },
    ]);
    expect(selector(optIn as PolicyObject, 'objectSelector')).toEqual([
      { key: 'outrigger.dev/inject', operator: 'In', values: ['enabled'] },
    ]);
    expect(selector(optIn as PolicyObject, 'namespaceSelector')?.[0]).toEqual({
      key: 'outrigger.dev/injection',
      operator: 'NotIn',
      values: ['enabled'],
    });
  });

  it('leaves out the namespaces the configuration excludes', () => {
    const objects = compilePolicies(
      input({ current: config('excludeNamespaces: [batch]\n'), systemNamespace: 'mesh' }),
    );
    for (const b of bindings(objects))
      expect(selector(b, 'namespaceSelector')).toContainEqual({
        key: 'kubernetes.io/metadata.name',
        operator: 'NotIn',
        values: ['batch', 'kube-node-lease', 'kube-public', 'kube-system', 'mesh'],
      });
  });

  it('gives each pinned revision its own policy, and the current one every pod not pinned to those', () => {
    const current = config('proxy:\n  logLevel: debug\n');
    const old = config(DEFAULT_CONFIG_YAML);
    const pinned = pinnedSnapshot(current, revisionContent(old.config), old.revision);
    const objects = compilePolicies(input({ current, pinned: new Map([[old.revision, pinned]]) }));
    const [now, then] = policies(objects);
    expect(now?.metadata.name).toBe(policyName('proxy', current.revision));
    expect(then?.metadata.name).toBe(policyName('proxy', old.revision));
    expect(conditions(now as PolicyObject).join()).toContain(`in ["${old.revision}"]`);
    expect(conditions(then as PolicyObject).join()).toContain(`== "${old.revision}"`);
    // The old revision's policy adds the old proxy: its own revision label and image.
    const patch = JSON.stringify(then?.spec.mutations);
    expect(patch).toContain(old.revision);
    expect(patch).not.toContain(current.revision);
  });

  it('leaves pods that ask for overrides to the webhook in the both mode, and only there', () => {
    const both = policies(compilePolicies(input({ mode: 'both' })));
    const alone = policies(compilePolicies(input({ mode: 'policy' })));
    expect(conditions(both[0] as PolicyObject).join()).toContain('config.outrigger.dev/');
    expect(conditions(alone[0] as PolicyObject).join()).not.toContain('config.outrigger.dev/');
  });

  it('compiles every set, each with its selectors in its bindings', () => {
    const yaml = readFileSync(join(CASES, 'sets-three.config.yaml'), 'utf8');
    const current = config(yaml);
    const objects = compilePolicies(input({ current }));
    const sets = policies(objects).map((p) => p.metadata.labels['outrigger.dev/set']);
    // In applied order: the proxy's units first, then each set's by order and name.
    expect(sets).toEqual(['proxy', ...appliedSets(current.config).map((a) => a.set.name)]);
    for (const s of current.config.sets) {
      const own = bindings(objects).filter(
        (b) => b.metadata.labels['outrigger.dev/set'] === s.name,
      );
      expect(own).toHaveLength(2);
      for (const [key, value] of Object.entries(s.podSelector?.matchLabels ?? {}))
        for (const b of own)
          expect(selector(b, 'objectSelector')).toContainEqual({
            key,
            operator: 'In',
            values: [value],
          });
    }
  });

  it('writes every expression as CEL the API server can parse: no JavaScript values leak in', () => {
    const yaml = readFileSync(join(CASES, 'sets-three.config.yaml'), 'utf8');
    const text = JSON.stringify(compilePolicies(input({ current: config(yaml) })));
    expect(text).not.toMatch(/undefined|NaN|\[object Object\]/);
  });
});
