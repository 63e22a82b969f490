// The configuration's sets as the admission path applies them: sorted once (order, then name),
// each with its revision, its names and ports, its compiled selectors and the volumes it needs
// of the pod, computed once per configuration.

import { canonicalJson } from '../config/canonical-json';
import type { Config } from '../config/config';
import { setRevision } from '../config/revision';
import { compareSets, type SidecarSetConfig } from '../config/sidecar-set';
import { isRecord, type Labels } from '../kubernetes/k8s';
import { compileSelector } from '../kubernetes/selector';
import { hostNetworkMismatch, setPorts, type SetPort } from './pod-ports';
import {
  setInjectKey,
  setRevisionLabel,
  setStatusAnnotation,
  setWaveKeys,
  type WaveKeys,
} from '../names';

/** A set as applied: its configuration, its revision, in applied order. */
export interface AppliedSet {
  readonly set: SidecarSetConfig;
  readonly revision: string;
  /** Its opt-out key, setInjectKey(name), and its pod label, setRevisionLabel(name). */
  readonly injectKey: string;
  readonly revisionLabel: string;
  /** Its status annotation, setStatusAnnotation(name): what it added to a pod. */
  readonly statusAnnotation: string;
  /** The names of its containers, init containers included, and of its volumes. */
  readonly containerNames: readonly string[];
  readonly volumeNames: readonly string[];
  /**
   * The volumes its containers mount that it does not add: the pod's own (an app's log
   * directory, say). A pod without one of them does not get the set.
   */
  readonly podVolumes: readonly string[];
  /** The ports its containers declare, init containers included, with their host ports. */
  readonly portSpecs: readonly SetPort[];
  /** A port whose hostPort is not its containerPort, which a host-network pod may not have. */
  readonly hostNetworkMismatch: string | undefined;
  /** Its selectors, compiled once: most sets do not match most pods. */
  readonly selectsPod: (labels: Labels | undefined) => boolean;
  readonly selectsNamespace: (labels: Labels | undefined) => boolean;
  /**
   * For each of its volumes that other sets add too (the same volume: the configuration's
   * check), their revision labels: a pod that carries one of them has the volume from it, which
   * this set shares rather than finds taken.
   */
  readonly sharedVolumes: ReadonlyMap<string, readonly string[]>;
  /** Each of its volumes as canonical JSON: a pod's volume of that name is shared only if equal. */
  readonly volumeJson: ReadonlyMap<string, string>;
  /** The names of its wave: its stamp, restart records and wave record (names.ts). */
  readonly keys: WaveKeys;
}

const applied = new WeakMap<Config, readonly AppliedSet[]>();

/** The configuration's sets in applied order (order, then name), each with its revision. */
export function appliedSets(config: Config): readonly AppliedSet[] {
  let sets = applied.get(config);
  if (!sets) {
    sets = [...config.sets].sort(compareSets).map((set) =>
      Object.freeze({
        set,
        revision: setRevision(set),
        injectKey: setInjectKey(set.name),
        revisionLabel: setRevisionLabel(set.name),
        statusAnnotation: setStatusAnnotation(set.name),
        containerNames: [...set.initContainers, ...set.containers].map((c) => c.name),
        volumeNames: set.volumes.map((v) => v.name),
        podVolumes: mountedFromPod(set),
        sharedVolumes: sharedVolumes(set, config.sets),
        volumeJson: new Map(set.volumes.map((v) => [v.name, canonicalJson(v)])),
        ...portsOf(set),
        selectsPod: compileSelector(set.podSelector),
        selectsNamespace: compileSelector(set.namespaceSelector),
        keys: setWaveKeys(set.name),
      }),
    );
    applied.set(config, sets);
  }
  return sets;
}

/** The volumes of `set` that other sets add too, with those sets' revision labels. */
function sharedVolumes(
  set: SidecarSetConfig,
  all: readonly SidecarSetConfig[],
): Map<string, string[]> {
  const shared = new Map<string, string[]>();
  for (const v of set.volumes)
    for (const other of all)
      if (other !== set && other.volumes.some((w) => w.name === v.name))
        shared.set(v.name, [...(shared.get(v.name) ?? []), setRevisionLabel(other.name)]);
  return shared;
}

function portsOf(set: SidecarSetConfig): Pick<AppliedSet, 'portSpecs' | 'hostNetworkMismatch'> {
  const portSpecs = setPorts(set);
  return { portSpecs, hostNetworkMismatch: hostNetworkMismatch(portSpecs) };
}

/** The volumes a set's containers mount or use as devices but the set does not add, once each. */
function mountedFromPod(set: SidecarSetConfig): string[] {
  const own = new Set(set.volumes.map((v) => v.name));
  const mounted = [...set.initContainers, ...set.containers].flatMap((c) =>
    [c.volumeMounts, c.volumeDevices].flatMap((uses) =>
      (Array.isArray(uses) ? (uses as unknown[]) : []).flatMap((m) =>
        isRecord(m) && typeof m.name === 'string' && !own.has(m.name) ? [m.name] : [],
      ),
    ),
  );
  return [...new Set(mounted)];
}
