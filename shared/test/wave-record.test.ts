// The wave's record on the ConfigMap: its stop, the resume, and reading them back.

import {
  readWave,
  RESUME,
  RESUMED_AT,
  resumePatch,
  WAVE_STAGE,
  WAVE_STOPPED,
  waveStopPatch,
} from '../src';
import { R1, NOW, iso, notStopped, present } from './owner-fixtures';

describe('the wave record on the ConfigMap', () => {
  it('reads nothing as a running wave', () => {
    expect(readWave(undefined)).toEqual(notStopped);
    expect(readWave({ [RESUME]: '' })).toEqual(notStopped);
  });

  it('round-trips a stop', () => {
    const patch = waveStopPatch({
      stop: {
        owner: { namespace: 'a', kind: 'Deployment', name: 'bad' },
        reason: 'deadline-exceeded',
        detail: 'not complete 600s after the restart',
      },
      revision: R1,
      nowMs: NOW,
    });
    const annotations = (patch.metadata as { annotations: Record<string, string> }).annotations;
    const value = present(annotations[WAVE_STOPPED], 'the stop annotation');
    expect(value).toBe(
      `${R1} a/Deployment/bad deadline-exceeded at ${iso(NOW)}: not complete 600s after the restart`,
    );
    expect(readWave({ [WAVE_STOPPED]: value }).stopped).toEqual({
      revision: R1,
      reason: `a/Deployment/bad deadline-exceeded at ${iso(NOW)}: not complete 600s after the restart`,
    });
  });

  it('a resume clears the stop and the request, and remembers when', () => {
    expect(resumePatch(NOW)).toEqual({
      metadata: {
        annotations: {
          [WAVE_STOPPED]: null,
          [RESUME]: null,
          [RESUMED_AT]: iso(NOW),
          [WAVE_STAGE]: null,
        },
      },
    });
    expect(readWave({ [RESUMED_AT]: iso(NOW) }).resumedAtMs).toBe(NOW);
    expect(readWave({ [RESUMED_AT]: 'garbage' }).resumedAtMs).toBeUndefined();
  });
});
