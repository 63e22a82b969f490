import { applyPatch, type Operation } from 'fast-json-patch';
import {
  admissionStampPatch,
  readStamp,
  stampMergePatch,
  stampPatch,
  templateChanged,
  type KubeObject,
} from '../src';

function deployment(template: Record<string, unknown> = {}, replicas = 3): KubeObject {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      replicas,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'app', image: 'web:1' }] },
        ...template,
      },
    },
  };
}

const apply = (obj: KubeObject, ops: unknown[]): KubeObject =>
  applyPatch(structuredClone(obj), ops as Operation[], true, false).newDocument;

const STAMP = { ownerKind: 'Deployment', ownerName: 'web', revision: 'r1' };

describe('stamp', () => {
  it('writes owner, revision and the stamped label, and nothing else', () => {
    const d = deployment();
    const stamped = apply(d, stampPatch(d, STAMP));
    expect(readStamp(stamped)).toEqual(STAMP);
    expect((stamped.spec as { template: { metadata: unknown } }).template.metadata).toEqual({
      labels: { app: 'web', 'outrigger.dev/stamped': 'true' },
      annotations: {
        'outrigger.dev/owner-kind': 'Deployment',
        'outrigger.dev/owner-name': 'web',
        'outrigger.dev/config-revision': 'r1',
      },
    });
    expect(stampPatch(stamped, STAMP)).toEqual([]);
  });

  it('creates template metadata where there is none, and escapes keys', () => {
    const d = deployment({ metadata: undefined });
    const ops = stampPatch(d, STAMP);
    expect(ops).toEqual([
      {
        op: 'add',
        path: '/spec/template/metadata',
        value: {
          labels: { 'outrigger.dev/stamped': 'true' },
          annotations: {
            'outrigger.dev/owner-kind': 'Deployment',
            'outrigger.dev/owner-name': 'web',
            'outrigger.dev/config-revision': 'r1',
          },
        },
      },
    ]);
    const withAnnotations = deployment({
      metadata: { labels: { app: 'web' }, annotations: { note: 'x' } },
    });
    expect(stampPatch(withAnnotations, STAMP).map((o) => o.path)).toEqual([
      '/spec/template/metadata/labels/outrigger.dev~1stamped',
      '/spec/template/metadata/annotations/outrigger.dev~1owner-kind',
      '/spec/template/metadata/annotations/outrigger.dev~1owner-name',
      '/spec/template/metadata/annotations/outrigger.dev~1config-revision',
    ]);
  });

  it('updates only the revision of an outdated stamp', () => {
    const d = apply(deployment(), stampPatch(deployment(), STAMP));
    expect(stampPatch(d, { ...STAMP, revision: 'r2' })).toEqual([
      {
        op: 'add',
        path: '/spec/template/metadata/annotations/outrigger.dev~1config-revision',
        value: 'r2',
      },
    ]);
  });

  it('has a merge-patch form for the controller', () => {
    expect(stampMergePatch(STAMP)).toEqual({
      spec: {
        template: {
          metadata: {
            labels: { 'outrigger.dev/stamped': 'true' },
            annotations: {
              'outrigger.dev/owner-kind': 'Deployment',
              'outrigger.dev/owner-name': 'web',
              'outrigger.dev/config-revision': 'r1',
            },
          },
        },
      },
    });
  });
});

describe('stamping at admission never costs a rollout', () => {
  const stamped = apply(deployment(), stampPatch(deployment(), STAMP));

  it('CREATE: always stamps with the current revision', () => {
    const d = deployment();
    expect(readStamp(apply(d, admissionStampPatch(d, undefined, 'r9')))).toEqual({
      ...STAMP,
      revision: 'r9',
    });
  });

  it('UPDATE of replicas only: the template stays byte-for-byte the same', () => {
    const scaled = structuredClone(stamped);
    (scaled.spec as { replicas: number }).replicas = 10;
    expect(templateChanged(stamped, scaled)).toBe(false);
    expect(admissionStampPatch(scaled, stamped, 'r9')).toEqual([]);
  });

  it('UPDATE that drops the stamp but keeps the template (kubectl replace): the old stamp is restored', () => {
    const replaced = deployment({}, 5);
    expect(templateChanged(stamped, replaced)).toBe(false);
    const result = apply(replaced, admissionStampPatch(replaced, stamped, 'r9'));
    expect(readStamp(result)).toEqual(STAMP);
    expect((result.spec as { template: unknown }).template).toEqual(
      (stamped.spec as { template: unknown }).template,
    );
  });

  it('UPDATE of an unstamped workload that leaves the template alone: no stamp', () => {
    const d = deployment();
    const labelled = { ...structuredClone(d), metadata: { name: 'web', labels: { team: 'a' } } };
    expect(admissionStampPatch(labelled, d, 'r9')).toEqual([]);
  });

  it('UPDATE that changes the template: stamps the current revision', () => {
    const changed = structuredClone(stamped);
    const spec = (changed.spec as { template: { spec: { containers: { image: string }[] } } })
      .template.spec;
    spec.containers = [{ ...spec.containers[0], image: 'web:2' }];
    expect(templateChanged(stamped, changed)).toBe(true);
    expect(readStamp(apply(changed, admissionStampPatch(changed, stamped, 'r9')))).toEqual({
      ...STAMP,
      revision: 'r9',
    });
  });

  it('ignores kinds without a template', () => {
    expect(
      admissionStampPatch({ kind: 'Deployment', metadata: { name: 'x' } }, undefined, 'r'),
    ).toEqual([]);
  });
});

describe('stamping at admission never undoes a restart', () => {
  const old = apply(deployment(), stampPatch(deployment(), STAMP));

  it('UPDATE in which the writer changed the stamp (the controller restarting): left alone', () => {
    const restarted = apply(old, stampPatch(old, { ...STAMP, revision: 'r2' }));
    expect(templateChanged(old, restarted)).toBe(false);
    expect(admissionStampPatch(restarted, old, 'r1')).toEqual([]);
    expect(admissionStampPatch(restarted, old, 'r2')).toEqual([]);
  });

  it('UPDATE that changes the template and carries a newer stamp: the webhook does not write its older revision', () => {
    const both = apply(old, stampPatch(old, { ...STAMP, revision: 'r3' }));
    const spec = (both.spec as { template: { spec: { containers: { image: string }[] } } }).template
      .spec;
    spec.containers = [{ ...spec.containers[0], image: 'web:3' }];
    expect(admissionStampPatch(both, old, 'r1')).toEqual([]);
  });
});
