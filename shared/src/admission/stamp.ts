// The stamp: owner annotations, the configuration revision and the `stamped` label in a
// workload's pod template, so every pod reaches the webhook already naming its owner.
// Also the comparison that tells whether an update changes the template apart from our stamp.

import type { KubeObject, PodLike } from '../kubernetes/k8s';
import { isRecord } from '../kubernetes/k8s';
import { CONFIG_REVISION, OWNER_KIND, OWNER_NAME, STAMPED, isSetStampKey } from '../names';
import { addToMap, type AddOperation } from './patch';
import { canonicalJson } from '../config/canonical-json';

/** The workloads the controller stamps and restarts. */
export const STAMPED_KINDS = ['Deployment', 'StatefulSet', 'DaemonSet'] as const;
export type StampedKind = (typeof STAMPED_KINDS)[number];

export function isStampedKind(kind: string | undefined): kind is StampedKind {
  return (STAMPED_KINDS as readonly string[]).includes(kind ?? '');
}

export interface Stamp {
  ownerKind: string;
  ownerName: string;
  revision: string;
}

export function templateOf(workload: KubeObject): PodLike | undefined {
  const spec = workload.spec;
  if (!isRecord(spec) || !isRecord(spec.template)) return undefined;
  return spec.template;
}

/** The stamp a workload's template carries now, if complete. */
export function readStamp(workload: KubeObject): Stamp | undefined {
  const meta = templateOf(workload)?.metadata ?? {};
  const annotations = meta.annotations ?? {};
  const stamp = {
    ownerKind: annotations[OWNER_KIND],
    ownerName: annotations[OWNER_NAME],
    revision: annotations[CONFIG_REVISION],
  };
  if (meta.labels?.[STAMPED] !== 'true' || !stamp.ownerKind || !stamp.ownerName || !stamp.revision)
    return undefined;
  return stamp as Stamp;
}

export function desiredStamp(workload: KubeObject, revision: string): Stamp {
  return { ownerKind: workload.kind ?? '', ownerName: workload.metadata?.name ?? '', revision };
}

export function stampEquals(a: Stamp | undefined, b: Stamp): boolean {
  return (
    a !== undefined &&
    a.ownerKind === b.ownerKind &&
    a.ownerName === b.ownerName &&
    a.revision === b.revision
  );
}

function stampAnnotations(stamp: Stamp): Record<string, string> {
  return {
    [OWNER_KIND]: stamp.ownerKind,
    [OWNER_NAME]: stamp.ownerName,
    [CONFIG_REVISION]: stamp.revision,
  };
}

/**
 * RFC 6902 operations that write `stamp` into the workload's template; empty when it is
 * already there. Our own keys are set with `add`, which replaces an outdated value of them;
 * nothing of the user's is touched.
 */
export function stampPatch(workload: KubeObject, stamp: Stamp): AddOperation[] {
  const template = templateOf(workload);
  if (!template || stampEquals(readStamp(workload), stamp)) return [];
  const base = ['spec', 'template', 'metadata'];
  const meta = template.metadata;
  if (!isRecord(meta)) {
    return [
      {
        op: 'add',
        path: '/spec/template/metadata',
        value: { labels: { [STAMPED]: 'true' }, annotations: stampAnnotations(stamp) },
      },
    ];
  }
  const labels = meta.labels?.[STAMPED] === 'true' ? {} : { [STAMPED]: 'true' };
  const annotations = Object.fromEntries(
    Object.entries(stampAnnotations(stamp)).filter(([k, v]) => meta.annotations?.[k] !== v),
  );
  return [
    ...addToMap([...base, 'labels'], meta.labels, labels),
    ...addToMap([...base, 'annotations'], meta.annotations, annotations),
  ];
}

/** The same stamp as a JSON merge patch of the workload (for the controller's writes). */
export function stampMergePatch(stamp: Stamp): Record<string, unknown> {
  return {
    spec: {
      template: {
        metadata: { labels: { [STAMPED]: 'true' }, annotations: stampAnnotations(stamp) },
      },
    },
  };
}

const STAMP_KEYS = { labels: [STAMPED], annotations: [OWNER_KIND, OWNER_NAME, CONFIG_REVISION] };

/** The template with our stamp taken out, as canonical JSON for comparison. */
function unstamped(template: unknown): string {
  if (!isRecord(template)) return canonicalJson(template ?? null);
  const meta = isRecord(template.metadata) ? { ...template.metadata } : {};
  for (const field of ['labels', 'annotations'] as const) {
    const map = isRecord(meta[field]) ? { ...meta[field] } : {};
    for (const key of STAMP_KEYS[field]) delete map[key];
    // The sets' stamps are ours too (set-stamp.ts): a restart of one set changes nothing of the user's.
    for (const key of Object.keys(map)) if (isSetStampKey(key)) delete map[key];
    if (Object.keys(map).length === 0) delete meta[field];
    else meta[field] = map;
  }
  const copy: Record<string, unknown> = { ...template, metadata: meta };
  if (Object.keys(meta).length === 0) delete copy.metadata;
  return canonicalJson(copy);
}

/**
 * Whether an update changes the pod template, leaving our stamp out of the comparison. Only
 * such updates roll the workload anyway, so only they may carry a new stamp for free.
 */
export function templateChanged(oldWorkload: KubeObject, newWorkload: KubeObject): boolean {
  return unstamped(templateOf(oldWorkload)) !== unstamped(templateOf(newWorkload));
}

/**
 * The stamp operations for a workload write at admission. docs/webhook.md says why.
 * CREATE: always the current stamp. UPDATE that changes the template: the current stamp, as
 * the workload rolls anyway. UPDATE that leaves the template alone: keep the stamp it had, even
 * when the new object dropped it (a `kubectl replace` of the original manifest), because any
 * difference in the template would start a rollout the user did not ask for.
 */
export function admissionStampPatch(
  newWorkload: KubeObject,
  oldWorkload: KubeObject | undefined,
  revision: string,
): AddOperation[] {
  if (!templateOf(newWorkload)) return [];
  if (oldWorkload === undefined)
    return stampPatch(newWorkload, desiredStamp(newWorkload, revision));
  const previous = readStamp(oldWorkload);
  const written = readStamp(newWorkload);
  // The writer changed the stamp itself: that is the controller restarting the owner (or an
  // admin doing it by hand). Never undo it, and never overwrite a newer revision with ours.
  if (written && !stampEquals(previous, written)) return [];
  if (templateChanged(oldWorkload, newWorkload))
    return stampPatch(newWorkload, desiredStamp(newWorkload, revision));
  return previous ? stampPatch(newWorkload, previous) : [];
}
