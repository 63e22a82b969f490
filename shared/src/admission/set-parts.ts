// What one set adds to a pod, built once per applied set and per kind of sidecar (native or
// classic), frozen and shared by every pod it matches.

import type { SidecarSetConfig } from '../config/sidecar-set';
import { deepFreeze, type Container, type Volume } from '../kubernetes/k8s';
import { setRevisionLabel, setStatusAnnotation } from '../names';
import type { AppliedSet } from './applied-sets';
import { registerFragment } from './patch';

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

/** Whether the set's sidecars are native ones on a cluster that does or does not run them. */
export const nativeFor = (set: SidecarSetConfig, supported: boolean): boolean =>
  set.nativeSidecar === 'auto' ? supported : set.nativeSidecar === 'true';

const partsOf = new WeakMap<AppliedSet, { native?: SetParts; classic?: SetParts }>();

/** The set's parts, built once per applied set and per kind of sidecar. */
export function setParts(a: AppliedSet, native: boolean): SetParts {
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
