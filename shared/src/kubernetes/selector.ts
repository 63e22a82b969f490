// Kubernetes label selectors (matchLabels and matchExpressions), read from the configuration
// and matched against a label map, by the same rules the API server applies: every term must
// hold, and an empty selector matches everything.

import type { Labels } from './k8s';
import { isRecord } from './k8s';
import { describe, list, oneOf, quote, str, struct, type Field } from '../config/schema';

export const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;
export type SelectorOperator = (typeof SELECTOR_OPERATORS)[number];

export interface SelectorRequirement {
  key: string;
  operator: SelectorOperator;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Labels;
  matchExpressions?: SelectorRequirement[];
}

// A label key: an optional DNS subdomain prefix and a name of up to 63 characters.
const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

const labelKey = str(LABEL_KEY, 'a label key such as app or example.com/tier');

const labelMap: Field<Labels> = (r, v, p) => {
  if (!isRecord(v))
    return r.fail(p, `must be a mapping of label keys to values; got ${describe(v)}`);
  const out: Labels = {};
  for (const [key, value] of Object.entries(v)) {
    if (!LABEL_KEY.test(key)) r.fail([...p, key], `is not a label key; got ${quote(key)}`);
    else if (typeof value !== 'string' || !LABEL_VALUE.test(value))
      r.fail([...p, key], `must be a label value (quote it: "true", "1"); got ${describe(value)}`);
    else out[key] = value;
  }
  return out;
};

const labelValue = str(LABEL_VALUE, 'a label value of up to 63 letters, digits, -, _ or .');

const requirementFields = struct<SelectorRequirement>({
  key: { read: labelKey },
  operator: { read: oneOf(SELECTOR_OPERATORS) },
  values: { read: list(labelValue) },
});

const requirement: Field<SelectorRequirement> = (r, v, p) => {
  const req = requirementFields(r, v, p);
  if (!req) return undefined;
  if (req.key === undefined || req.operator === undefined)
    return r.fail(p, 'must have a key and an operator (In, NotIn, Exists, DoesNotExist)');
  const needsValues = req.operator === 'In' || req.operator === 'NotIn';
  const count = req.values?.length ?? 0;
  if (needsValues && count === 0)
    return r.fail([...p, 'values'], `must list at least one value for operator ${req.operator}`);
  if (!needsValues && count > 0)
    return r.fail([...p, 'values'], `must be empty for operator ${req.operator}`);
  return req;
};

export const labelSelector: Field<LabelSelector> = struct<LabelSelector>({
  matchLabels: { read: labelMap },
  matchExpressions: { read: list(requirement) },
});

function holds(req: SelectorRequirement, labels: Labels): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, req.key);
  const value = labels[req.key];
  switch (req.operator) {
    case 'In':
      return has && (req.values ?? []).includes(value ?? '');
    case 'NotIn':
      return !has || !(req.values ?? []).includes(value ?? '');
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

/** Whether the labels satisfy every term of the selector; an empty selector matches all. */
export function matchesSelector(selector: LabelSelector, labels: Labels | undefined): boolean {
  const l = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (l[key] !== value) return false;
  return (selector.matchExpressions ?? []).every((req) => holds(req, l));
}

/**
 * The selector as a predicate, for selectors checked against many label maps (a sidecar set's,
 * for every pod): matchesSelector without its allocations.
 */
export function compileSelector(
  selector: LabelSelector | undefined,
): (labels: Labels | undefined) => boolean {
  if (!selector) return () => true;
  const keys = Object.keys(selector.matchLabels ?? {});
  const values = keys.map((k) => selector.matchLabels?.[k]);
  const reqs = selector.matchExpressions ?? [];
  return (labels) => {
    const l = labels ?? {};
    for (let i = 0; i < keys.length; i++) if (l[keys[i] as string] !== values[i]) return false;
    for (const req of reqs) if (!holds(req, l)) return false;
    return true;
  };
}
