// Quiet owners: most owners of a cluster, most of the time. Nothing is due for them, no restart
// of ours is in flight or left to record, and the gate does not judge them, so the planner's
// verdict for each is `none` and they take no slot and move no stage. The controller plans over
// the other owners only, and keeps a quiet owner's assessment (which then does not depend on the
// clock) until its inputs change: one owner's event then costs the same in a cluster of ten
// owners as in one of ten thousand. shared/test/quiet-owners.test.ts checks, over random fleets
// and wave states, that planFleet decides exactly what planWave over every owner decides.

import type { OwnerAssessment } from './owner-state';
import { inWave } from './wave-verdict';
import { planWave, type WaveInput, type WavePlan } from './wave';
import type { WaveState } from './wave-stop';

/**
 * `quiet`: left out of every plan. `in-wave`: restarted by the current wave and otherwise quiet,
 * left out once that wave is recorded complete (the gate judges no one then), unless something
 * stops it. `active`: always planned.
 */
export type Quietness = 'quiet' | 'in-wave' | 'active';

const QUIET_STATES: ReadonlySet<OwnerAssessment['state']> = new Set([
  'current',
  'not-enabled',
  'rolling',
  'stalled',
]);

export function quietness(assessment: OwnerAssessment): Quietness {
  const idle =
    QUIET_STATES.has(assessment.state) &&
    !assessment.due &&
    !assessment.inFlight &&
    !assessment.following &&
    !assessment.completed &&
    assessment.stall === undefined;
  if (!idle) return 'active';
  return inWave(assessment) ? 'in-wave' : 'quiet';
}

/** The wave to the current revision is recorded complete, with no stop or resume since. */
export function waveComplete(wave: WaveState, revision: string): boolean {
  return (
    wave.stage?.revision === revision &&
    wave.stage.stage === 'complete' &&
    wave.stopped?.revision !== revision &&
    !wave.resumeRequested
  );
}

export interface FleetOwners {
  /** The owners whose quietness is `active`. */
  active: readonly OwnerAssessment[];
  /** The owners whose quietness is `in-wave`. */
  inWave: readonly OwnerAssessment[];
}

/**
 * planWave over the owners that can matter. The report has entries for those owners only; every
 * other owner's would be `none`.
 */
export function planFleet(input: Omit<WaveInput, 'owners'>, fleet: FleetOwners): WavePlan {
  const all = (): OwnerAssessment[] => [...fleet.active, ...fleet.inWave];
  if (!waveComplete(input.wave, input.revision)) return planWave({ ...input, owners: all() });
  const plan = planWave({ ...input, owners: fleet.active });
  // A stop rolls back every owner the wave restarted, those in-wave included.
  return plan.stopped ? planWave({ ...input, owners: all() }) : plan;
}
