// The shape of the fields the core reads from a Pod or a workload, checked before it reads them.
// The API server only ever sends well-typed objects; anything else is a hostile or broken
// client, and it gets an error naming the field instead of a crash deep inside injection.
// Absent and null fields are fine, the core treats them as empty; except the few a Kubernetes
// object always has and the core reads without a default ('required string'). What a pod must
// have besides for injection to add to it (containers, each named) is invalidSpec's.

import { isRecord, type PodLike } from '../kubernetes/k8s';
import { clipped, describe as describeValue } from '../config/schema';

/** What a field must be, in the words of the error message. */
type Kind =
  'string' | 'required string' | 'boolean' | 'integer' | 'mapping' | 'list' | 'string map';

/** A list whose items are mappings of one shape. */
class ListOf {
  constructor(readonly item: Shape) {}
}
const listOf = (item: Shape): ListOf => new ListOf(item);

/** A mapping's fields and their shapes; a nested Shape is a mapping. */
interface Shape {
  readonly [field: string]: Kind | Shape | ListOf;
}

// The API server refuses an owner reference without a kind or a name; owner.ts reads both.
const OWNER_REFERENCE: Shape = {
  apiVersion: 'string',
  kind: 'required string',
  name: 'required string',
  controller: 'boolean',
};

const METADATA: Shape = {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  uid: 'string',
  resourceVersion: 'string',
  labels: 'string map',
  annotations: 'string map',
  ownerReferences: listOf(OWNER_REFERENCE),
};

const CONTAINER: Shape = {
  name: 'string',
  image: 'string',
  restartPolicy: 'string',
  ports: listOf({ name: 'string', containerPort: 'integer', protocol: 'string' }),
  env: listOf({ name: 'string' }),
  resources: { requests: 'string map', limits: 'string map' },
  securityContext: 'mapping',
  volumeMounts: listOf({ name: 'string' }),
};

const POD_SPEC: Shape = {
  containers: listOf(CONTAINER),
  initContainers: listOf(CONTAINER),
  volumes: listOf({ name: 'string' }),
  hostNetwork: 'boolean',
  restartPolicy: 'string',
};

const POD: Shape = { metadata: METADATA, spec: POD_SPEC };

const WORKLOAD: Shape = {
  metadata: METADATA,
  spec: { template: POD, updateStrategy: { type: 'string' }, replicas: 'integer' },
};

function kindMatches(kind: Kind, value: unknown): boolean {
  switch (kind) {
    case 'string':
    case 'required string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'mapping':
      return isRecord(value);
    case 'list':
      return Array.isArray(value);
    case 'string map':
      return isRecord(value) && allStrings(value);
  }
}

function allStrings(map: Record<string, unknown>): boolean {
  for (const key in map) if (typeof map[key] !== 'string') return false;
  return true;
}

/**
 * Whether every field has its shape. The common case, every admission's, so it builds no path
 * and allocates nothing; only a value that does not fit is walked again for the message.
 */
function fits(spec: Shape[string] | undefined, value: unknown): boolean {
  if (value === undefined || value === null) return spec !== 'required string';
  if (spec === undefined) return true;
  if (typeof spec === 'string') return kindMatches(spec, value);
  if (spec instanceof ListOf) return Array.isArray(value) && listFits(spec.item, value);
  return isRecord(value) && shapeFits(spec, value);
}

function listFits(item: Shape, list: unknown[]): boolean {
  for (const entry of list) if (!isRecord(entry) || !shapeFits(item, entry)) return false;
  return true;
}

function shapeFits(shape: Shape, value: Record<string, unknown>): boolean {
  for (const field in shape) if (!fits(shape[field], value[field])) return false;
  return true;
}

/** Names the first string-map entry that is not a string, or the value itself. */
function stringMapIssue(value: unknown, path: string): string {
  if (!isRecord(value)) return `${path} must be a mapping of strings; got ${describeValue(value)}`;
  const [key, bad] = Object.entries(value).find(([, v]) => typeof v !== 'string') ?? ['', ''];
  return `${path}.${clipped(key)} must be a string; got ${describeValue(bad)}`;
}

function fieldIssue(spec: Shape[string], value: unknown, path: string): string | undefined {
  if (value === undefined || value === null)
    return spec === 'required string' ? `${path} is required: set it to a string` : undefined;
  if (typeof spec === 'string') {
    if (kindMatches(spec, value)) return undefined;
    if (spec === 'string map') return stringMapIssue(value, path);
    const article = spec === 'integer' ? 'an' : 'a';
    const kind = spec === 'required string' ? 'string' : spec;
    return `${path} must be ${article} ${kind}; got ${describeValue(value)}`;
  }
  if (spec instanceof ListOf) return listIssue(spec.item, value, path);
  if (!isRecord(value)) return `${path} must be a mapping; got ${describeValue(value)}`;
  return shapeIssue(spec, value, path);
}

function listIssue(item: Shape, value: unknown, path: string): string | undefined {
  if (!Array.isArray(value)) return `${path} must be a list; got ${describeValue(value)}`;
  for (let i = 0; i < value.length; i++) {
    const entry: unknown = value[i];
    if (!isRecord(entry)) return `${path}[${i}] must be a mapping; got ${describeValue(entry)}`;
    const issue = shapeIssue(item, entry, `${path}[${i}]`);
    if (issue) return issue;
  }
  return undefined;
}

function shapeIssue(
  shape: Shape,
  value: Record<string, unknown>,
  path: string,
): string | undefined {
  for (const [field, spec] of Object.entries(shape)) {
    const issue = fieldIssue(spec, value[field], `${path}.${field}`);
    if (issue) return issue;
  }
  return undefined;
}

/**
 * The first field of a Pod the core would misread, as `<path>.<field> must be ...; got ...`,
 * or undefined when every field it reads has the right type. `path` names the object.
 */
export function podShapeIssue(pod: Record<string, unknown>, path: string): string | undefined {
  return shapeFits(POD, pod) ? undefined : shapeIssue(POD, pod, path);
}

/** The same for a Deployment, StatefulSet or DaemonSet, its pod template included. */
export function workloadShapeIssue(
  workload: Record<string, unknown>,
  path: string,
): string | undefined {
  return shapeFits(WORKLOAD, workload) ? undefined : shapeIssue(WORKLOAD, workload, path);
}

const isListOrAbsent = (v: unknown): boolean => v === undefined || v === null || Array.isArray(v);
const isNamed = (c: unknown): boolean => isRecord(c) && typeof c.name === 'string';

/**
 * Why a pod whose fields have their types (podShapeIssue) still cannot be injected safely: what
 * a Pod must have for injection to add to it. Undefined when it can be. The webhook's review
 * checked the types already; `outrigger inject` reads manifests nobody checked, so this is
 * checked for every pod.
 */
export function invalidSpec(pod: PodLike): string | undefined {
  const spec: unknown = pod.spec;
  if (!isRecord(spec)) return 'spec is missing or not a mapping';
  if (!Array.isArray(spec.containers) || spec.containers.length === 0)
    return 'spec.containers must be a non-empty list';
  const notList = (['initContainers', 'volumes'] as const).find(
    (key) => !isListOrAbsent(spec[key]),
  );
  if (notList) return `spec.${notList} must be a list`;
  const allNamed = (list: unknown): boolean => ((list as unknown[] | null) ?? []).every(isNamed);
  if (!allNamed(spec.containers) || !allNamed(spec.initContainers))
    return 'every container must be a mapping with a name';
  if (!allNamed(spec.volumes)) return 'every volume must be a mapping with a name';
  const meta: unknown = pod.metadata;
  if (!isRecord(meta) && meta !== undefined && meta !== null) return 'metadata must be a mapping';
  return undefined;
}
