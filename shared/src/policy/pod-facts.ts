// What every compiled policy reads of the pod, as CEL variables (`variables.<name>`): the same
// facts admission reads in TypeScript (decide.ts, owner.ts, set-injection.ts), written once.

import {
  DISABLED,
  ENABLED,
  INJECT,
  OTHER_MESH_ANNOTATIONS,
  OTHER_MESH_CONTAINERS,
  OVERRIDE_PREFIX,
  OWNER_KIND,
  OWNER_NAME,
} from '../names';
import { celString, celStrings } from './cel';

export interface Variable {
  name: string;
  expression: string;
}

const v = (name: string): string => `variables.${name}`;

/** The value at `key` of the map `map` (CEL), or the empty string. */
export const valueAt = (map: string, key: string): string =>
  `${map}[?${celString(key)}].orValue("")`;

/** Whether a label or an annotation `key` says `disabled`. */
export const saysDisabled = (key: string): string =>
  `(${valueAt(v('labels'), key)} == ${celString(DISABLED)} || ${valueAt(v('annotations'), key)} == ${celString(DISABLED)})`;

const controllerRef = 'r.?controller.orValue(false)';

/**
 * The revision a pod's template pins for `key`, read as the webhook reads it: only on a pod a
 * controller made (a controller reference), else the empty string. For matchConditions, which
 * see no variables.
 */
export const pinnedBy = (key: string): string =>
  `(object.metadata.?ownerReferences.orValue([]).exists(r, ${controllerRef}) ? ${valueAt('object.metadata.?annotations.orValue({})', key)} : "")`;

/** Whether the pod asks for an override by annotation (config.outrigger.dev/...). */
export const OVERRIDDEN = `object.metadata.?annotations.orValue({}).exists(k, k.startsWith(${celString(OVERRIDE_PREFIX)}))`;

/** A label value the API server takes as it is (kubernetes/label.ts). */
export const isLabelValue = (value: string): string =>
  `(size(${value}) <= 63 && ${value}.matches("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"))`;

const ownerKind = [
  `${v('stamped')} ? ${v('annotations')}[${celString(OWNER_KIND)}]`,
  `size(${v('ref')}) == 0 ? "Pod"`,
  `${v('deployment')} ? "Deployment"`,
  `${v('ref')}[0].kind`,
].join(' : ');

const ownerName = [
  `${v('stamped')} ? ${v('annotations')}[${celString(OWNER_NAME)}]`,
  `size(${v('ref')}) == 0 ? (has(object.metadata.name) ? object.metadata.name : object.metadata.?generateName.orValue(""))`,
  `${v('deployment')} ? ${v('ref')}[0].name.substring(0, size(${v('ref')}[0].name) - size(${v('hash')}) - 1)`,
  `${v('ref')}[0].name`,
].join(' : ');

/** The variables, in the order they may refer to each other. */
export const POD_VARIABLES: readonly Variable[] = Object.freeze([
  { name: 'annotations', expression: 'object.metadata.?annotations.orValue({})' },
  { name: 'labels', expression: 'object.metadata.?labels.orValue({})' },
  { name: 'refs', expression: 'object.metadata.?ownerReferences.orValue([])' },
  {
    name: 'ref',
    expression: `${v('refs')}.exists(r, ${controllerRef}) ? ${v('refs')}.filter(r, ${controllerRef}) : ${v('refs')}`,
  },
  { name: 'hash', expression: valueAt(v('labels'), 'pod-template-hash') },
  {
    name: 'stamped',
    expression: `${valueAt(v('annotations'), OWNER_KIND)} != "" && ${valueAt(v('annotations'), OWNER_NAME)} != ""`,
  },
  {
    name: 'deployment',
    expression: `size(${v('ref')}) > 0 && ${v('ref')}[0].kind == "ReplicaSet" && ${v('hash')} != "" && ${v('ref')}[0].name.endsWith("-" + ${v('hash')}) && size(${v('ref')}[0].name) > size(${v('hash')}) + 1`,
  },
  { name: 'ownerKind', expression: ownerKind },
  { name: 'ownerName', expression: ownerName },
  { name: 'initContainers', expression: 'object.spec.?initContainers.orValue([])' },
  { name: 'containers', expression: 'object.spec.?containers.orValue([])' },
  { name: 'volumes', expression: 'object.spec.?volumes.orValue([]).map(x, x.name)' },
  {
    name: 'names',
    expression: `${v('initContainers')}.map(c, c.name) + ${v('containers')}.map(c, c.name)`,
  },
  {
    // The pod-wide opt-out (decide.ts, decideOptIn): the label first, then the annotation.
    name: 'podOptedOut',
    expression: `${valueAt(v('labels'), INJECT)} == ${celString(DISABLED)} || (${valueAt(v('labels'), INJECT)} != ${celString(ENABLED)} && ${valueAt(v('annotations'), INJECT)} == ${celString(DISABLED)})`,
  },
  {
    name: 'completes',
    expression: `${v('ownerKind')} in ["Job", "CronJob"] || object.spec.?restartPolicy.orValue("") in ["Never", "OnFailure"]`,
  },
  {
    name: 'otherMesh',
    expression: `${v('names')}.exists(n, n in ${celStrings(OTHER_MESH_CONTAINERS)}) || ${v('annotations')}.exists(k, k in ${celStrings(OTHER_MESH_ANNOTATIONS)})`,
  },
]);

export { v as variable };
