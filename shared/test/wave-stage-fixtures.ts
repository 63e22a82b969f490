// Fixtures of the wave-stage tests: owners of a wave, the gate's verdicts, a fixed clock.

import {
  decideStage,
  defaultConfig,
  type CanaryConfig,
  type GateVerdict,
  type RolloutConfig,
  type StageDecision,
  type StageInput,
  type StageOwner,
  type StageRecord,
} from '../src';

export const R0 = '0000000000';
export const R1 = '1111111111';
export const NOW = Date.parse('2026-05-01T12:00:00Z');
export const SOAK = 120;

export const PASSED: GateVerdict = {
  state: 'passed',
  detail: 'rollout complete, 2 of 2 pods Ready',
};
export const PENDING: GateVerdict = { state: 'pending', detail: '1 of 2 pods Ready' };
export const FAILED: GateVerdict = {
  state: 'failed',
  detail: 'container outrigger-proxy of pod x is CrashLoopBackOff',
};

export function rollout(
  canary: Partial<CanaryConfig> = {},
  extra: Partial<RolloutConfig> = {},
): RolloutConfig {
  const base = defaultConfig().rollout;
  return { ...base, canary: { ...base.canary, count: 1, soakSeconds: SOAK, ...canary }, ...extra };
}

export function owner(key: string, o: Partial<StageOwner> = {}): StageOwner {
  return {
    key,
    canaryEligible: true,
    canary: false,
    inWave: false,
    gate: undefined,
    candidate: undefined,
    waiting: false,
    busy: false,
    following: false,
    rollingBack: false,
    autoRestartDisabled: false,
    ...o,
  };
}

/** Due for the revision and free to start, budget and window permitting. */
export const outdated = (key: string, o: Partial<StageOwner> = {}) =>
  owner(key, { candidate: 'rollout', ...o });
/** Restarted by this wave as a canary; the gate says how it is doing. */
export const canary = (key: string, gate: GateVerdict) =>
  owner(key, { canary: true, inWave: true, gate, following: gate.state === 'pending' });
/** Restarted by this wave past the canary stage. */
export const restarted = (key: string, gate: GateVerdict = PASSED) =>
  owner(key, { inWave: true, gate });
export const current = (key: string) => owner(key);

export function decide(input: Partial<StageInput>): StageDecision {
  return decideStage({
    revision: R1,
    rollout: rollout(),
    record: undefined,
    lastGood: undefined,
    stopped: false,
    nowMs: NOW,
    owners: [],
    ...input,
  });
}

export const sorted = (s: ReadonlySet<string>): string[] => [...s].sort();
export const soaking = (sinceMs: number, revision = R1): StageRecord => ({
  revision,
  stage: 'soaking',
  sinceMs,
});
export const recorded = (stage: StageRecord['stage'], sinceMs = NOW - 3600_000): StageRecord => ({
  revision: R1,
  stage,
  sinceMs,
});
