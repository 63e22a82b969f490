// The patches kept for the pods whose patch is the same (inject.ts, buildPatch), bounded in
// count and in size whatever the number of configurations and override combinations.

import { deepFreeze } from '../kubernetes/k8s';
import type { AddOperation } from './patch';

/**
 * At most this many patches, and as many keys seen once, are kept; and none whose key is longer
 * than a pod a cluster can hold makes (owner names are at most 253 characters, container names
 * 63). Any client can send reviews, so what is kept is bounded in count and in size: under
 * 10 MiB with the base64 the webhook keeps beside it.
 */
const MAX_KEPT = 1024;
const MAX_KEY_LENGTH = 640;

/** Each object's number, which a key starts with: given at first sight, never reused. */
const ids = new WeakMap<object, number>();
let nextId = 0;

/** The number of an object a patch is built from (sidecar parts, a set's parts, a volume order). */
export function keyId(of: object): number {
  let id = ids.get(of);
  if (id === undefined) ids.set(of, (id = nextId++));
  return id;
}

const kept = new Map<string, readonly AddOperation[]>();
/** Keys seen once: a patch is kept from its second pod on. */
const seenOnce = new Set<string>();

/** The patch kept under `key`, or the one `build` makes, kept (frozen) once seen twice. */
export function keptPatch(key: string, build: () => AddOperation[]): readonly AddOperation[] {
  const known = kept.get(key);
  if (known) return known;
  const patch = build();
  if (key.length > MAX_KEY_LENGTH) return patch;
  if (!seenOnce.has(key)) {
    if (seenOnce.size >= MAX_KEPT) seenOnce.clear();
    seenOnce.add(key);
    return patch;
  }
  seenOnce.delete(key);
  if (kept.size >= MAX_KEPT) kept.clear();
  const shared = deepFreeze(patch);
  kept.set(key, shared);
  return shared;
}
