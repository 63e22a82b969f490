// Pinned revisions at admission: a pod gets the revision its template is stamped with while the
// history holds it, the current one when unstamped or stamped with the current one, and the
// current one with a warning when the stamped revision is unknown. A user's update of a pinned
// owner's template keeps the pinned revision in the stamp.

import {
  CONFIG_REVISION,
  OWNER_KIND,
  OWNER_NAME,
  REVISION,
  STAMPED,
  defaultConfig,
  makeSnapshot,
  pinnedSnapshot,
  revisionContent,
  type ConfigSnapshot,
} from '@outrigger/shared';
import { admitPod, admitWorkload, type AdmissionState } from '../src/admit';
import { parseReview } from '../src/review';
import { admissionReview } from '@outrigger/testkit';

const oldConfig = defaultConfig();
const current = makeSnapshot({
  ...oldConfig,
  proxy: { ...oldConfig.proxy, image: 'ghcr.io/outrigger/proxy:2.0.0' },
});
const old = pinnedSnapshot(current, revisionContent(oldConfig));

function state(pinned: ConfigSnapshot[]): AdmissionState {
  return {
    snapshot: current,
    pinned: new Map(pinned.map((s) => [s.revision, s])),
    namespaces: undefined,
    nativeSidecarSupported: true,
    systemNamespace: 'outrigger-system',
  };
}

/** A pod its ReplicaSet made from a template stamped with `revision`. */
const pod = (
  revision?: string,
  o: { bare?: boolean; annotations?: Record<string, string> } = {},
) => ({
  metadata: {
    labels: { app: 'web', 'pod-template-hash': 'abc12' },
    annotations: { ...(revision ? { [CONFIG_REVISION]: revision } : {}), ...o.annotations },
    ...(o.bare
      ? {}
      : {
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'ReplicaSet',
              name: 'web-abc12',
              uid: 'u',
              controller: true,
            },
          ],
        }),
  },
  spec: { containers: [{ name: 'web', image: 'web:1' }] },
});

interface Op {
  op: string;
  path: string;
  value: unknown;
}

function injectedWith(a: ReturnType<typeof admitPod>) {
  const ops = JSON.parse(Buffer.from(a.response.patch ?? '', 'base64').toString()) as Op[];
  const text = JSON.stringify(ops);
  const labels = ops.find((o) => o.path === '/metadata/labels')?.value as
    Record<string, string> | undefined;
  const revision =
    labels?.[REVISION] ?? ops.find((o) => o.path.endsWith(REVISION.replace('/', '~1')))?.value;
  return { text, revision };
}

describe('which revision a pod gets', () => {
  it('the pinned revision while the history holds it: its proxy image', () => {
    expect(old.revision).not.toBe(current.revision);
    const a = admitPod(parseReview(admissionReview(pod(old.revision))), state([old]));
    const got = injectedWith(a);
    expect(got.revision).toBe(old.revision);
    expect(got.text).toContain(oldConfig.proxy.image);
    expect(got.text).not.toContain('proxy:2.0.0');
    expect(a.revision).toEqual({ rule: 'pinned', revision: old.revision });
    expect(a.response.warnings ?? []).toEqual([]);
  });

  it('the current revision for a bare pod, whatever its annotation says', () => {
    const a = admitPod(
      parseReview(admissionReview(pod(old.revision, { bare: true }))),
      state([old]),
    );
    expect(injectedWith(a).revision).toBe(current.revision);
    expect(a.revision?.rule).toBe('current');
  });

  it("the current overrides policy, never the pinned revision's", () => {
    // the old revision allowed proxy-image overrides from evil.io; today's does not
    const permissive = defaultConfig();
    const before = {
      ...permissive,
      overrides: { ...permissive.overrides, allowedRegistries: ['evil.io/'] },
    };
    const strict = makeSnapshot({
      ...permissive,
      proxy: { ...permissive.proxy, image: 'ghcr.io/outrigger/proxy:2.0.0' },
    });
    const pinned = pinnedSnapshot(strict, revisionContent(before));
    const s: AdmissionState = {
      ...state([]),
      snapshot: strict,
      pinned: new Map([[pinned.revision, pinned]]),
    };
    const attack = pod(pinned.revision, {
      annotations: { 'config.outrigger.dev/proxy-image': 'evil.io/proxy:1' },
    });
    const a = admitPod(parseReview(admissionReview(attack)), s);
    expect(injectedWith(a).revision).toBe(pinned.revision);
    expect(injectedWith(a).text).not.toContain('evil.io');
    expect(a.response.warnings?.join()).toMatch(/evil\.io/);
  });

  it('the current revision when unstamped or stamped with the current one', () => {
    for (const p of [pod(), pod(current.revision)]) {
      const a = admitPod(parseReview(admissionReview(p)), state([old]));
      expect(injectedWith(a).revision).toBe(current.revision);
      expect(a.revision?.rule).toBe('current');
    }
  });

  it('the current revision with a warning when the stamped one is not in the history', () => {
    const a = admitPod(parseReview(admissionReview(pod(old.revision))), state([]));
    expect(injectedWith(a).revision).toBe(current.revision);
    expect(a.revision).toEqual({
      rule: 'fallback',
      revision: current.revision,
      requested: old.revision,
    });
    expect(a.response.warnings?.join()).toMatch(
      new RegExp(`pinned to configuration revision ${old.revision}.*rollout.history`),
    );
  });
});

describe('the stamp of a workload write', () => {
  const kind = { group: 'apps', version: 'v1', kind: 'Deployment' };
  const deployment = (image: string, revision?: string) => ({
    metadata: { name: 'web' },
    spec: {
      template: {
        metadata: {
          labels: revision ? { [STAMPED]: 'true' } : {},
          annotations: revision
            ? { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: 'web', [CONFIG_REVISION]: revision }
            : {},
        },
        spec: { containers: [{ name: 'web', image }] },
      },
    },
  });
  const stampOf = (a: ReturnType<typeof admitWorkload>): string => {
    const ops = JSON.parse(Buffer.from(a.response.patch ?? 'W10=', 'base64').toString()) as Op[];
    const annotations = ops.find((o) => o.path === '/spec/template/metadata/annotations')?.value as
      Record<string, string> | undefined;
    const single = ops.find((o) => o.path.endsWith(CONFIG_REVISION.replace('/', '~1')));
    return annotations?.[CONFIG_REVISION] ?? (single?.value as string | undefined) ?? '';
  };

  it("keeps a pinned revision when the user's update changes the template", () => {
    const update = (pinned: ConfigSnapshot[]) =>
      admitWorkload(
        parseReview(
          admissionReview(deployment('web:2', old.revision), {
            kind,
            operation: 'UPDATE',
            oldObject: deployment('web:1', old.revision),
          }),
        ),
        state(pinned),
      );
    // the written stamp names the pinned revision already: left as it is
    const kept = update([old]);
    expect(kept.result.reason).toBe('stamp-current');
    expect(stampOf(kept)).toBe('');
    // a revision the history no longer holds moves to the current one with the user's rollout
    expect(stampOf(update([]))).toBe(current.revision);
  });

  it('stamps a new owner with the current revision', () => {
    const a = admitWorkload(
      parseReview(admissionReview(deployment('web:1'), { kind })),
      state([old]),
    );
    expect(stampOf(a)).toBe(current.revision);
  });
});
