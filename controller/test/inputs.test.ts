// The controller's pure inputs: the object cache's diff, the pod counts per owner and their
// selectors, and reading the configuration out of its ConfigMap.

import type { V1ConfigMap, V1Pod } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  LAST_GOOD_REVISION,
  OWNER_KIND,
  OWNER_NAME,
  RESUME,
  REVISION,
  STAMPED,
  WAVE_STAGE,
  WAVE_STOPPED,
  configRevision,
  defaultConfig,
} from '@outrigger/shared';
import { ObjectCache } from '../src/watch/cache';
import { readConfigMap } from '@outrigger/shared';
import { ConfigHolder } from '../src/config/config-map';
import { countPods, injectedPodSelector, podOwnerKey } from '../src/watch/pods';

const ns = (name: string, rv: string) => ({ metadata: { name, resourceVersion: rv } });

describe('ObjectCache', () => {
  it('reports what changed by resourceVersion and what went away', () => {
    const cache = new ObjectCache();
    expect(cache.hasSynced).toBe(false);
    expect(cache.replace([ns('a', '1'), ns('b', '1')]).changed).toHaveLength(2);
    const diff = cache.replace([ns('a', '1'), ns('c', '3')]);
    expect(diff.changed.map((o) => o.metadata?.name)).toEqual(['c']);
    expect(diff.deleted).toEqual(['b']);
    expect(cache.hasSynced).toBe(true);
    expect(cache.get('a')).toEqual(ns('a', '1'));
  });

  it('keys namespaced objects by namespace/name', () => {
    const cache = new ObjectCache();
    cache.replace([{ metadata: { namespace: 'shop', name: 'web', resourceVersion: '1' } }]);
    expect([...cache.keys()]).toEqual(['shop/web']);
  });
});

function pod(o: {
  name: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  owner?: { kind: string; name: string };
  deleting?: boolean;
}): V1Pod {
  return {
    metadata: {
      name: o.name,
      namespace: 'shop',
      labels: o.labels,
      annotations: o.annotations,
      ownerReferences: o.owner
        ? [
            {
              apiVersion: 'apps/v1',
              kind: o.owner.kind,
              name: o.owner.name,
              uid: 'u',
              controller: true,
            },
          ]
        : undefined,
      ...(o.deleting ? { deletionTimestamp: new Date(0) } : {}),
    },
  };
}

describe('pods per owner', () => {
  const stamp = { [OWNER_KIND]: 'Deployment', [OWNER_NAME]: 'web' };

  it('selects outdated injected pods only, or every injected pod when opting out sheds', () => {
    expect(injectedPodSelector('r1', false)).toBe(`${REVISION},${REVISION}!=r1`);
    expect(injectedPodSelector('r1', true)).toBe(REVISION);
    // While a wave runs, the gate reads the pods at its revision too.
    expect(injectedPodSelector('r1', false, true)).toBe(REVISION);
  });

  it('names the owner from the stamp, else a ReplicaSet by its hash, and ignores other owners', () => {
    expect(podOwnerKey(pod({ name: 'p', annotations: stamp }))).toBe('shop/Deployment/web');
    const fromRs = pod({
      name: 'p',
      labels: { 'pod-template-hash': 'abc12' },
      owner: { kind: 'ReplicaSet', name: 'api-abc12' },
    });
    expect(podOwnerKey(fromRs)).toBe('shop/Deployment/api');
    expect(podOwnerKey(pod({ name: 'j', owner: { kind: 'Job', name: 'once' } }))).toBeUndefined();
  });

  it('counts escaped, injected and outdated pods, leaving out pods being deleted', () => {
    const counts = countPods(
      {
        // As the escaped pods' selector lists them: stamped, neither injected nor skipped.
        escaped: [
          pod({ name: 'e1', annotations: stamp, labels: { [STAMPED]: 'true' } }),
          pod({ name: 'e2', annotations: stamp, labels: { [STAMPED]: 'true' }, deleting: true }),
        ],
        injected: [
          pod({ name: 'i1', annotations: stamp, labels: { [REVISION]: 'r0' } }),
          pod({ name: 'i2', annotations: stamp, labels: { [REVISION]: 'r1' } }),
        ],
      },
      'r1',
    );
    expect(counts.get('shop/Deployment/web')).toEqual({
      escaped: 1,
      injected: 2,
      outdated: 1,
      atRevision: {
        total: 1,
        ready: 0,
        trouble: undefined,
        unready: [{ name: expect.any(String), uid: undefined, resourceVersion: undefined }],
      },
    });
  });

  it('reports the proxy in trouble and the Ready pods at the revision, for the gate', () => {
    const at = (name: string, status: Record<string, unknown>) => ({
      ...pod({ name, annotations: stamp, labels: { [REVISION]: 'r1' } }),
      status,
    });
    const ready = { conditions: [{ type: 'Ready', status: 'True' }] };
    const crashing = {
      initContainerStatuses: [
        {
          name: 'outrigger-proxy',
          restartCount: 3,
          state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } },
        },
      ],
    };
    const counts = countPods(
      { escaped: [], injected: [at('ok', ready), at('bad', crashing)] },
      'r1',
    );
    expect(counts.get('shop/Deployment/web')?.atRevision).toEqual({
      total: 2,
      ready: 1,
      trouble: {
        pod: 'bad',
        container: 'outrigger-proxy',
        reason: 'CrashLoopBackOff',
        restarts: 3,
        message: 'back-off 40s',
      },
      unready: [{ name: 'bad', uid: undefined, resourceVersion: undefined }],
    });
  });
});

describe('the configuration from its ConfigMap', () => {
  const ref = { namespace: 'outrigger-system', name: 'outrigger-config' };
  const cm = (text: string | undefined, rv = '1'): V1ConfigMap => ({
    metadata: { name: ref.name, namespace: ref.namespace, resourceVersion: rv },
    data: text === undefined ? {} : { [CONFIG_MAP_KEY]: text },
  });

  it('names the object, the key and the fix when it cannot be read', () => {
    expect(readConfigMap(undefined, ref)).toMatchObject({
      reason: 'missing',
      message: expect.stringContaining(
        'ConfigMap outrigger-system/outrigger-config does not exist',
      ),
    });
    expect(readConfigMap(cm(undefined), ref)).toMatchObject({
      reason: 'no-key',
      message: expect.stringContaining(`has no key ${CONFIG_MAP_KEY}`),
    });
    const invalid = readConfigMap(cm('rollout:\n  maxConcurrent: 0\n'), ref);
    expect(invalid).toMatchObject({ reason: 'invalid' });
    expect('errors' in invalid && invalid.errors.join()).toContain('.rollout.maxConcurrent');
  });

  it('keeps the last good configuration when a new version is invalid', () => {
    const holder = new ConfigHolder(ref);
    expect(holder.offer(cm('')).configChanged).toBe(true);
    expect(holder.inForce?.revision).toBe(configRevision(defaultConfig()));
    const bad = holder.offer(cm('proxy: [', '2'));
    expect(bad).toMatchObject({ configChanged: false, problem: { reason: 'invalid' } });
    expect(holder.inForce?.revision).toBe(configRevision(defaultConfig()));
    expect(holder.configMap?.metadata?.resourceVersion).toBe('2');
    // The same configuration again (an annotation changed): nothing to roll, and the same
    // object in force, which the owners' assessments were made against (a new one would have
    // every owner assessed again).
    const before = holder.inForce;
    expect(holder.offer(cm('', '3')).configChanged).toBe(false);
    expect(holder.inForce).toBe(before);
    // A rollout setting changes no revision but is a change all the same.
    expect(holder.offer(cm('rollout:\n  maxConcurrent: 9\n', '4')).configChanged).toBe(true);
  });

  it('tells apart a change a wave step must see from the stage record the controller wrote', () => {
    const holder = new ConfigHolder(ref);
    const annotated = (rv: string, annotations: Record<string, string>, text = '') => ({
      ...cm(text, rv),
      metadata: { ...cm(text, rv).metadata, uid: 'u1', annotations },
    });
    const waveInputs = (c: V1ConfigMap | undefined) => holder.offer(c).waveInputsChanged;
    expect(waveInputs(annotated('1', {}))).toBe(true);
    // The controller's own record of the stage it reached and of the last good revision: the
    // step that wrote it decided with it; reading it back changes no plan.
    const stage = 'abc complete 2026-12-02T10:00:00Z';
    expect(waveInputs(annotated('2', { [WAVE_STAGE]: stage, [LAST_GOOD_REVISION]: 'abc' }))).toBe(
      false,
    );
    // The same ConfigMap again (a re-list): nothing to look at.
    expect(waveInputs(annotated('2', { [WAVE_STAGE]: stage, [LAST_GOOD_REVISION]: 'abc' }))).toBe(
      false,
    );
    // A stop, an admin's resume, any other annotation, the configuration, a new object, or
    // none at all: each is a wave input.
    const base = { [WAVE_STAGE]: stage, [LAST_GOOD_REVISION]: 'abc' };
    expect(waveInputs(annotated('3', { ...base, [WAVE_STOPPED]: 'abc shop/web stalled' }))).toBe(
      true,
    );
    expect(waveInputs(annotated('4', base))).toBe(true);
    expect(waveInputs(annotated('5', { ...base, [RESUME]: 'now' }))).toBe(true);
    expect(waveInputs(annotated('6', { ...base, [RESUME]: 'now', note: 'x' }))).toBe(true);
    expect(waveInputs(annotated('7', { ...base, [RESUME]: 'now', note: 'x' }, 'proxy: ['))).toBe(
      true,
    );
    const recreated = annotated('8', { ...base, [RESUME]: 'now', note: 'x' }, 'proxy: [');
    expect(waveInputs({ ...recreated, metadata: { ...recreated.metadata, uid: 'u2' } })).toBe(true);
    expect(waveInputs(undefined)).toBe(true);
    expect(waveInputs(undefined)).toBe(false);
  });
});
