// The slices of Kubernetes object types the core reads and writes. Only the fields Outrigger
// looks at are typed; everything else passes through untouched as unknown.

export type Labels = Record<string, string>;

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  labels?: Labels;
  annotations?: Labels;
  ownerReferences?: OwnerReference[];
  [key: string]: unknown;
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid?: string;
  controller?: boolean;
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: Record<string, unknown>;
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol?: string;
  [key: string]: unknown;
}

export interface ResourceRequirements {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

export interface Container {
  name: string;
  image?: string;
  ports?: ContainerPort[];
  env?: EnvVar[];
  resources?: ResourceRequirements;
  restartPolicy?: string;
  [key: string]: unknown;
}

export interface Volume {
  name: string;
  [key: string]: unknown;
}

export interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  hostNetwork?: boolean;
  restartPolicy?: string;
  [key: string]: unknown;
}

/** A Pod, or the pod template of a workload: both have metadata and a pod spec. */
export interface PodLike {
  metadata?: ObjectMeta;
  spec?: PodSpec;
  [key: string]: unknown;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  [key: string]: unknown;
}

/** The metadata of a namespace that injection decisions need. */
export interface NamespaceMeta {
  name: string;
  labels?: Labels;
  annotations?: Labels;
}

/** A Namespace's metadata as the core reads it, with the resourceVersion it was read at. */
export function namespaceMeta(ns: {
  metadata?: { name?: string; labels?: Labels; annotations?: Labels; resourceVersion?: string };
}): NamespaceMeta & { resourceVersion?: string } {
  return {
    name: ns.metadata?.name ?? '',
    labels: ns.metadata?.labels ?? {},
    annotations: ns.metadata?.annotations ?? {},
    resourceVersion: ns.metadata?.resourceVersion,
  };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A deep copy of plain JSON data. Used instead of structuredClone, which builds its copies in
 * the main realm: arrays it returns fail `instanceof Array` inside a vm context such as jest's.
 */
export function cloneJson<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** Freezes a value and everything in it; what is frozen already is left as it is. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
