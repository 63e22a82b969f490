// The sets a pod carries already, read off their status annotations (what each added, by name):
// a template injected by hand with `outrigger inject`, whose pods the webhook sees again after
// the configuration gained a set. The new set goes among them by its place (set-patch.ts).

import type { Config } from '../config/config';
import { DEFAULT_SET, DEFAULT_SET_ORDER, type SetPosition } from '../config/sidecar-set';
import { isRecord, type PodLike } from '../kubernetes/k8s';
import { STATUS } from '../names';
import { appliedSets } from './applied-sets';

/** A set the pod carries: its place, and the names of what it added. */
export interface CarriedSet {
  readonly order: number;
  readonly name: string;
  readonly position: SetPosition;
  /** A classic proxy: its init container redirects traffic, after every other before-app one. */
  readonly initLast: boolean;
  readonly inits: readonly string[];
  readonly main: readonly string[];
  readonly volumes: readonly string[];
}

const NONE: readonly CarriedSet[] = [];

/** A status annotation's lists of names, or undefined when it is absent or not one of ours. */
function statusOf(
  text: string | undefined,
): { inits: string[]; main: string[]; volumes: string[] } | undefined {
  if (text === undefined) return undefined;
  let status: unknown;
  try {
    status = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(status)) return undefined;
  const names = (v: unknown): string[] =>
    Array.isArray(v) ? v.filter((n): n is string => typeof n === 'string') : [];
  return {
    inits: names(status.initContainers),
    main: names(status.containers),
    volumes: names(status.volumes),
  };
}

/** The proxy and the configuration's sets whose status the pod carries, each with its place. */
export function carriedSets(pod: PodLike, config: Config): readonly CarriedSet[] {
  const annotations = pod.metadata?.annotations;
  if (!annotations) return NONE;
  let out: CarriedSet[] | undefined;
  const proxy = statusOf(annotations[STATUS]);
  if (proxy)
    (out ??= []).push({
      order: DEFAULT_SET_ORDER,
      name: DEFAULT_SET,
      position: 'before-app',
      initLast: proxy.main.length > 0,
      ...proxy,
    });
  for (const a of appliedSets(config)) {
    const status = statusOf(annotations[a.statusAnnotation]);
    if (status)
      (out ??= []).push({
        order: a.set.order,
        name: a.set.name,
        position: a.set.position,
        initLast: false,
        ...status,
      });
  }
  return out ?? NONE;
}

/**
 * How the sets of this pass are placed: among the sets the pod carries, or where it has a
 * volume one of them shares (placed once, and not again); undefined where they go at the ends
 * of each list, as into a pod that carries nothing (nearly every pod: the patch is kept).
 */
export function placementOf(
  pod: PodLike,
  config: Config,
  parts: readonly { volumes: readonly { name: string }[] }[],
): readonly CarriedSet[] | undefined {
  const carried = carriedSets(pod, config);
  if (carried.length > 0) return carried;
  const volumes: unknown[] = pod.spec?.volumes ?? [];
  if (volumes.length === 0 || parts.length === 0) return undefined;
  const names = new Set(volumes.map((v) => (isRecord(v) ? v.name : undefined)));
  return parts.some((p) => p.volumes.some((v) => names.has(v.name))) ? NONE : undefined;
}
