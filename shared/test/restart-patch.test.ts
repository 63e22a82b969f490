// The merge patches that record a restart, a heal and a completion on the workload.

import {
  COMPLETED_REVISION,
  HEALED_AT,
  HEALED_REVISION,
  NO_REVISION,
  RESTARTED_AT,
  RESTARTED_REVISION,
  restartPatch,
} from '../src';
import { R0, R1, NOW, iso, workload, write } from './owner-fixtures';

describe('restartPatch', () => {
  const order = (kind: 'rollout' | 'heal' | 'shed', revision = R1) => ({
    owner: { namespace: 'shop', kind: 'Deployment' as const, name: 'web' },
    kind,
    revision,
  });

  it('a rollout stamps the new revision and records the restart on the workload', () => {
    const w = workload({ stamp: R0, labels: { [COMPLETED_REVISION]: R0 } });
    expect(restartPatch({ workload: w, order: order('rollout'), nowMs: NOW })).toEqual({
      metadata: {
        resourceVersion: '41',
        labels: { [COMPLETED_REVISION]: null },
        annotations: {
          [RESTARTED_REVISION]: R1,
          [RESTARTED_AT]: iso(NOW),
        },
      },
      spec: {
        template: {
          metadata: {
            labels: { 'outrigger.dev/stamped': 'true' },
            annotations: {
              'outrigger.dev/owner-kind': 'Deployment',
              'outrigger.dev/owner-name': 'web',
              'outrigger.dev/config-revision': R1,
            },
          },
        },
      },
    });
  });

  it('a rollout whose stamp is already current nudges the template so the pods roll', () => {
    const w = workload();
    const p = restartPatch({ workload: w, order: order('rollout'), nowMs: NOW });
    expect(write(w, p).metadata?.generation).toBe(3);
  });

  it('a heal also records the heal, and always changes the template', () => {
    const w = workload();
    const p = restartPatch({ workload: w, order: order('heal'), nowMs: NOW });
    expect(p.metadata).toMatchObject({
      annotations: { [HEALED_REVISION]: R1, [HEALED_AT]: iso(NOW), [RESTARTED_REVISION]: R1 },
    });
    expect(write(w, p).metadata?.generation).toBe(3);
  });

  it('shedding takes the stamp off the template', () => {
    const w = workload();
    const after = write(
      w,
      restartPatch({ workload: w, order: order('shed', NO_REVISION), nowMs: NOW }),
    );
    const meta = (after.spec?.template as { metadata: { labels: object; annotations: object } })
      .metadata;
    expect(meta.labels).toEqual({ app: 'web' });
    expect(Object.keys(meta.annotations)).toEqual([]);
    expect(after.metadata?.annotations?.[RESTARTED_REVISION]).toBe(NO_REVISION);
  });

  it('shedding an unstamped template still changes it', () => {
    const w = workload({ stamp: null });
    const p = restartPatch({ workload: w, order: order('shed', NO_REVISION), nowMs: NOW });
    expect(write(w, p).metadata?.generation).toBe(3);
  });
});
