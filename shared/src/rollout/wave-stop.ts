// The wave's record on the configuration ConfigMap: its stop (which a new revision or an admin's
// resume lifts) and the admin's resume, read back from the annotations and written as merge
// patches, so every replica reaches the same decisions.

import { formatTime, parseTime } from '../kubernetes/time';
import type { Labels } from '../kubernetes/k8s';
import { parseStageRecord, readLastGood, type StageRecord } from './wave-stage';
import { PROXY_KEYS, type WaveKeys } from '../names';
import { ownerKey, type OwnerRef, type StallReason } from './owner-state';

export interface WaveStop {
  /** The configuration revision the wave stopped at; a new revision lifts the stop. */
  revision: string;
  /** Free text: the owner, the reason and when, for the admin who reads the ConfigMap. */
  reason: string;
}

/** The wave's record on the configuration ConfigMap. */
export interface WaveState {
  stopped: WaveStop | undefined;
  resumeRequested: boolean;
  resumedAtMs: number | undefined;
  /** How far the wave got past its canaries. */
  stage?: StageRecord;
  /** The last revision whose wave completed. */
  lastGood?: string;
}

type Patch = Record<string, unknown>;

// The stop is `<revision> <free text>` rather than JSON: every value parses (a hand-edited
// one cannot wedge the controller), and an admin can read it, or write one to stop a wave.
function parseStop(value: string | undefined): WaveStop | undefined {
  const text = value?.trim() ?? '';
  if (text === '') return undefined;
  const [revision = '', ...rest] = text.split(/\s+/);
  return { revision, reason: rest.join(' ') };
}

/** The wave's record of the proxy, or of the set whose names `keys` are. */
export function readWave(annotations: Labels | undefined, keys: WaveKeys = PROXY_KEYS): WaveState {
  return {
    stopped: parseStop(annotations?.[keys.waveStopped]),
    resumeRequested: (annotations?.[keys.resume] ?? '') !== '',
    resumedAtMs: parseTime(annotations?.[keys.resumedAt]),
    stage: parseStageRecord(annotations?.[keys.waveStage]),
    lastGood: readLastGood(annotations, keys),
  };
}

/** Why the wave stopped: our rollout stalled, or the proxy failed the health gate. */
export type StopReason = StallReason | 'proxy-failing';

export interface StopDecision {
  owner: OwnerRef;
  reason: StopReason;
  detail: string;
}

export interface WaveStopPatchInput {
  stop: StopDecision;
  revision: string;
  nowMs: number;
  keys?: WaveKeys;
}

/** The stop as one line an admin can read in `kubectl get configmap -o yaml`. */
export function waveStopPatch({
  stop,
  revision,
  nowMs,
  keys = PROXY_KEYS,
}: WaveStopPatchInput): Patch {
  const value = `${revision} ${ownerKey(stop.owner)} ${stop.reason} at ${formatTime(nowMs)}: ${stop.detail}`;
  // The stage goes with the stop: a resume judges the canaries again from the start.
  return { metadata: { annotations: { [keys.waveStopped]: value, [keys.waveStage]: null } } };
}

export function clearStopPatch(keys: WaveKeys = PROXY_KEYS): Patch {
  return { metadata: { annotations: { [keys.waveStopped]: null } } };
}

export function resumePatch(nowMs: number, keys: WaveKeys = PROXY_KEYS): Patch {
  return {
    metadata: {
      annotations: {
        [keys.waveStopped]: null,
        [keys.resume]: null,
        [keys.resumedAt]: formatTime(nowMs),
        [keys.waveStage]: null,
      },
    },
  };
}
