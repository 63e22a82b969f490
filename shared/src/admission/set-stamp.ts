// The sidecar sets' part of the stamp: `<set>.sets.outrigger.dev/config-revision` in a workload's
// pod template, one annotation per set that selects it, beside the proxy's stamp (stamp.ts). The
// webhook writes it when a workload is created or its template changes, so the pods it makes
// are pinned to each set's revision and the set's wave knows the owner is current; the
// controller moves it when it restarts the owner for that set.

import type { KubeObject } from '../kubernetes/k8s';
import { isRecord } from '../kubernetes/k8s';
import { isSetStampKey } from '../names';
import { addToMap, type AddOperation } from './patch';
import { templateChanged, templateOf } from './stamp';

/** One set's stamp as a workload write should carry it. */
export interface SetStampWanted {
  /** The set's stamp annotation (its WaveKeys.configRevision). */
  key: string;
  /** The set's current revision. */
  revision: string;
  /** Whether the history holds `revision` of this set, so pods pinned to it can get it. */
  held: (revision: string) => boolean;
}

/**
 * The value each set's stamp should have after a workload write, by the proxy's rules: a create
 * gets the current revision; an update that moves the stamp itself is the controller's restart
 * (or an admin's) and is kept; an update that changes the template keeps the revision it was
 * pinned to while the history holds it, as the wave, not that change, decides when the owner
 * moves; an update that leaves the template alone keeps the stamp it had, even when the new
 * object dropped it (a `kubectl replace` of the original manifest).
 */
function wantedValue(
  want: SetStampWanted,
  newValue: string | undefined,
  oldValue: string | undefined,
  update: { old: KubeObject; changed: boolean } | undefined,
): string | undefined {
  if (!update) return want.revision;
  if (newValue !== undefined && newValue !== oldValue) return newValue;
  if (update.changed)
    return oldValue !== undefined && want.held(oldValue) ? oldValue : want.revision;
  return oldValue;
}

const annotationsOf = (workload: KubeObject | undefined): Record<string, string> =>
  (workload && templateOf(workload)?.metadata?.annotations) ?? {};

/**
 * A stamp of a set that no longer selects the template (or is no longer configured) is kept
 * too when the template is otherwise unchanged: dropping it would roll the owner.
 */
function keepDropped(
  out: Record<string, string>,
  before: Readonly<Record<string, string>>,
  now: Readonly<Record<string, string>>,
): void {
  for (const [key, value] of Object.entries(before))
    if (isSetStampKey(key) && now[key] === undefined && !(key in out)) out[key] = value;
}

/** The annotations to write so every set's stamp has its value; empty when all have. */
export function setStampAnnotations(
  newWorkload: KubeObject,
  oldWorkload: KubeObject | undefined,
  wanted: readonly SetStampWanted[],
): Record<string, string> {
  const out: Record<string, string> = {};
  const template = templateOf(newWorkload);
  if (wanted.length === 0 || !template) return out;
  const now = template.metadata?.annotations ?? {};
  const before = annotationsOf(oldWorkload);
  const update = oldWorkload && {
    old: oldWorkload,
    changed: templateChanged(oldWorkload, newWorkload),
  };
  for (const want of wanted) {
    const value = wantedValue(want, now[want.key], before[want.key], update);
    if (value !== undefined && value !== now[want.key]) out[want.key] = value;
  }
  if (update && !update.changed) keepDropped(out, before, now);
  return out;
}

/**
 * The proxy's stamp operations with the sets' stamp annotations added: into the operation that
 * creates the template's metadata or annotations, when the proxy's does, as a second `add` of
 * the whole map would replace the first.
 */
export function withSetStamps(
  ops: readonly AddOperation[],
  workload: KubeObject,
  annotations: Readonly<Record<string, string>>,
): AddOperation[] {
  if (Object.keys(annotations).length === 0) return [...ops];
  const meta = templateOf(workload)?.metadata;
  const out = ops.map((op) => ({ ...op }));
  const whole = out.find((op) => op.path === '/spec/template/metadata');
  if (whole && isRecord(whole.value)) {
    const value = whole.value;
    whole.value = {
      ...value,
      annotations: { ...(isRecord(value.annotations) ? value.annotations : {}), ...annotations },
    };
    return out;
  }
  const map = out.find((op) => op.path === '/spec/template/metadata/annotations');
  if (map && isRecord(map.value)) {
    map.value = { ...map.value, ...annotations };
    return out;
  }
  if (!isRecord(meta))
    return [
      ...out,
      { op: 'add', path: '/spec/template/metadata', value: { annotations: { ...annotations } } },
    ];
  return [
    ...out,
    ...addToMap(['spec', 'template', 'metadata', 'annotations'], meta.annotations, annotations),
  ];
}
