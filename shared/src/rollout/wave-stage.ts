// The stage a wave is in, and what the stage allows (docs/controller.md, "The wave"). A wave
// restarts its canary owners first; once every canary passes the health gate it soaks, and only
// when the canaries stayed healthy for the soak does the rest of the wave start. A failed gate
// stops the wave, and with `onFailure: rollback` the owners the wave restarted go back to the
// last revision whose wave completed. Everything a replacement leader needs is read back from
// the cluster: the canaries carry CANARY_REVISION, the soak's start and the passing of the
// canary stage are on the ConfigMap (WAVE_STAGE), so a leader change neither skips the soak
// nor restarts a canary twice.

import type { RolloutConfig } from '../config/config';
import type { GateVerdict } from './gate';
import type { Labels } from '../kubernetes/k8s';
import { PROXY_KEYS, type WaveKeys } from '../names';
import { formatTime, parseTime } from '../kubernetes/time';

export const WAVE_STAGES = [
  'canary',
  'soaking',
  'rolling',
  'complete',
  'stopped',
  'rolling-back',
  'rolled-back',
] as const;
export type WaveStage = (typeof WAVE_STAGES)[number];

/** The stages worth recording: each is a fact a replacement leader could not derive. */
export type RecordedStage = Extract<WaveStage, 'soaking' | 'rolling' | 'complete'>;
const RECORDED: readonly string[] = ['soaking', 'rolling', 'complete'];

export interface StageRecord {
  revision: string;
  stage: RecordedStage;
  sinceMs: number;
}

export function parseStageRecord(value: string | undefined): StageRecord | undefined {
  const [revision = '', stage = '', since = ''] = (value ?? '').trim().split(/\s+/);
  const sinceMs = parseTime(since);
  if (revision === '' || !RECORDED.includes(stage) || sinceMs === undefined) return undefined;
  return { revision, stage: stage as RecordedStage, sinceMs };
}

export const formatStageRecord = (record: StageRecord): string =>
  `${record.revision} ${record.stage} ${formatTime(record.sinceMs)}`;

export function readLastGood(
  annotations: Labels | undefined,
  keys: WaveKeys = PROXY_KEYS,
): string | undefined {
  const value = annotations?.[keys.lastGood]?.trim();
  return value ? value : undefined;
}

/** The ConfigMap patch that records a stage, and the last good revision when the wave completed. */
export function stagePatch(
  record: StageRecord | undefined,
  lastGood: string | undefined,
  keys: WaveKeys = PROXY_KEYS,
): Record<string, unknown> {
  return {
    metadata: {
      annotations: {
        ...(record ? { [keys.waveStage]: formatStageRecord(record) } : {}),
        ...(lastGood ? { [keys.lastGood]: lastGood } : {}),
      },
    },
  };
}

/** What the stage decision needs to know of one owner. */
export interface StageOwner {
  key: string;
  /** Matches the canary selectors. */
  canaryEligible: boolean;
  /** Restarted to the current revision as a canary of this wave. */
  canary: boolean;
  /** Restarted by this wave and still stamped with its revision: the gate watches it. */
  inWave: boolean;
  gate: GateVerdict | undefined;
  /** A rollout or shed restart that may start now, budget and window permitting. */
  candidate: 'rollout' | 'shed' | 'heal' | undefined;
  /** Due for the revision but waiting on something outside the wave (someone else's rollout). */
  waiting: boolean;
  /** Waiting for something that passes by itself: its own rollout under way, a back-off. */
  busy: boolean;
  /** Our restart to the current revision is still rolling. */
  following: boolean;
  /** A rollback of ours from the current revision is still rolling. */
  rollingBack: boolean;
  /** The template carries `outrigger.dev/auto-restart: disabled`: a rollback leaves it alone. */
  autoRestartDisabled: boolean;
}

export interface StageInput {
  revision: string;
  rollout: RolloutConfig;
  record: StageRecord | undefined;
  lastGood: string | undefined;
  stopped: boolean;
  nowMs: number;
  /** In the planner's stable order. */
  owners: readonly StageOwner[];
}

export interface StageDecision {
  stage: WaveStage;
  /** One line for `outrigger status` and logs. */
  detail: string;
  /** Rollout candidates this stage does not let start, by key. */
  held: ReadonlySet<string>;
  /** Candidates that start as canaries, by key. */
  canaries: ReadonlySet<string>;
  /**
   * Owners to roll back, by key, and the revision to roll them back to; and those the wave
   * restarted that a rollback leaves alone, as their automatic restarts are disabled.
   */
  rollback: { keys: readonly string[]; to: string; kept: readonly string[] } | undefined;
  /** A stage to record on the ConfigMap now. */
  record: StageRecord | undefined;
  /** The revision to record as the last good one now. */
  lastGood: string | undefined;
  recheckAtMs: number | undefined;
}

const NONE: Omit<StageDecision, 'stage' | 'detail'> = {
  held: new Set(),
  canaries: new Set(),
  rollback: undefined,
  record: undefined,
  lastGood: undefined,
  recheckAtMs: undefined,
};

function stoppedStage(input: StageInput): StageDecision {
  const to =
    input.rollout.onFailure === 'rollback' &&
    input.lastGood !== undefined &&
    input.lastGood !== input.revision
      ? input.lastGood
      : undefined;
  if (to === undefined) {
    const why =
      input.rollout.onFailure === 'stop'
        ? 'onFailure is stop'
        : 'no earlier revision completed a wave, so there is nothing to roll back to';
    return {
      ...NONE,
      stage: 'stopped',
      detail: `the wave to ${input.revision} is stopped; ${why}`,
    };
  }
  const restarted = input.owners.filter((o) => o.inWave);
  const keys = restarted.filter((o) => !o.autoRestartDisabled).map((o) => o.key);
  const kept = restarted.filter((o) => o.autoRestartDisabled).map((o) => o.key);
  const busy = keys.length > 0 || input.owners.some((o) => o.rollingBack);
  return {
    ...NONE,
    stage: busy ? 'rolling-back' : 'rolled-back',
    detail:
      (busy
        ? `rolling ${keys.length} owners back from ${input.revision} to ${to}`
        : `the owners the wave to ${input.revision} restarted are back on ${to}`) +
      (kept.length > 0
        ? `; ${kept.length} left on ${input.revision}, as their automatic restarts are disabled`
        : ''),
    rollback: keys.length > 0 || kept.length > 0 ? { keys, to, kept } : undefined,
  };
}

/** Nothing left to restart, follow or judge: the wave is complete. */
function isComplete(input: StageInput): boolean {
  return !input.owners.some(
    (o) =>
      o.candidate === 'rollout' ||
      o.candidate === 'shed' ||
      o.waiting ||
      o.following ||
      (o.inWave && o.gate !== undefined && o.gate.state !== 'passed'),
  );
}

function completeStage(input: StageInput, record: StageRecord | undefined): StageDecision {
  return {
    ...NONE,
    stage: 'complete',
    detail: `every owner in scope runs ${input.revision}`,
    record:
      record?.stage === 'complete'
        ? undefined
        : { revision: input.revision, stage: 'complete', sinceMs: input.nowMs },
    lastGood: input.lastGood === input.revision ? undefined : input.revision,
  };
}

const rolling = (input: StageInput, record: StageRecord | undefined): StageDecision => ({
  ...NONE,
  stage: 'rolling',
  detail: `restarting outdated owners, at most ${input.rollout.maxConcurrent} at once`,
  record:
    record?.stage === 'rolling' || record?.stage === 'complete'
      ? undefined
      : { revision: input.revision, stage: 'rolling', sinceMs: input.nowMs },
});

/** Every rollout candidate but the canaries waits for the canary stage to pass. */
function holdAllBut(input: StageInput, canaries: ReadonlySet<string>): Set<string> {
  return new Set(
    input.owners.filter((o) => o.candidate === 'rollout' && !canaries.has(o.key)).map((o) => o.key),
  );
}

function canaryStage(input: StageInput, record: StageRecord | undefined): StageDecision {
  const { count, soakSeconds } = input.rollout.canary;
  const restarted = input.owners.filter((o) => o.canary && o.inWave);
  const slots = count - restarted.length;
  const chosen = new Set(
    input.owners
      .filter((o) => o.candidate === 'rollout' && o.canaryEligible)
      .slice(0, Math.max(0, slots))
      .map((o) => o.key),
  );
  const held = holdAllBut(input, chosen);
  if (chosen.size > 0)
    return {
      ...NONE,
      stage: 'canary',
      detail: `restarting canary owners (${restarted.length + chosen.size} of at most ${count})`,
      held,
      canaries: chosen,
    };
  if (restarted.length === 0) {
    // A canary that is due but busy (someone else's rollout): wait for it rather than go on
    // without a canary.
    const busy = input.owners.find((o) => o.busy && o.canaryEligible);
    if (busy)
      return {
        ...NONE,
        stage: 'canary',
        detail: `waiting for canary ${busy.key}, whose own rollout is under way`,
        held,
      };
    // The canaries that soaked are gone (deleted, opted out): the soak still runs its time.
    if (record?.stage === 'soaking' && input.nowMs < record.sinceMs + soakSeconds * 1000) {
      const endMs = record.sinceMs + soakSeconds * 1000;
      return {
        ...NONE,
        stage: 'soaking',
        detail: `the canaries are gone; the rest of the wave starts at ${formatTime(endMs)}`,
        held,
        recheckAtMs: endMs,
      };
    }
    // No owner matches the canary selectors: there is nothing to judge the revision by first.
    return rolling(input, record);
  }
  return soakStage(input, record, { restarted, held, soakSeconds });
}

/** Every canary restarted: they must pass the gate, then stay healthy for the soak. */
function soakStage(
  input: StageInput,
  record: StageRecord | undefined,
  soak: { restarted: readonly StageOwner[]; held: ReadonlySet<string>; soakSeconds: number },
): StageDecision {
  const { restarted, held, soakSeconds } = soak;
  const pending = restarted.filter((o) => o.gate?.state !== 'passed');
  const soaking = record?.stage === 'soaking';
  if (pending.length > 0)
    return {
      ...NONE,
      stage: soaking ? 'soaking' : 'canary',
      detail: `waiting for ${pending.length} canary owners to pass the gate: ${pending[0]?.key}: ${pending[0]?.gate?.detail ?? 'not judged yet'}`,
      held,
    };
  if (soakSeconds === 0) return rolling(input, record);
  const sinceMs = soaking ? record.sinceMs : input.nowMs;
  const endMs = sinceMs + soakSeconds * 1000;
  if (input.nowMs >= endMs) return rolling(input, record);
  return {
    ...NONE,
    stage: 'soaking',
    detail: `${restarted.length} canary owners healthy; the rest of the wave starts at ${formatTime(endMs)} if they stay so`,
    held,
    record: soaking ? undefined : { revision: input.revision, stage: 'soaking', sinceMs },
    recheckAtMs: endMs,
  };
}

export function decideStage(input: StageInput): StageDecision {
  if (input.stopped) return stoppedStage(input);
  const record = input.record?.revision === input.revision ? input.record : undefined;
  if (isComplete(input)) return completeStage(input, record);
  if (
    record?.stage === 'rolling' ||
    record?.stage === 'complete' ||
    input.rollout.canary.count === 0
  )
    return { ...rolling(input, record), record: undefined };
  return canaryStage(input, record);
}
