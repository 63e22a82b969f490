// The namespace decision: which label each namespace should carry, and the patch (or none).

import { DISABLED, ENABLED, INJECT, INJECTION_LABEL, type NamespaceMeta } from '@outrigger/shared';
import type { V1Namespace } from '@kubernetes/client-node';
import type { KubeApi } from '@outrigger/kube';
import {
  CONFLICT_REQUEUE_MS,
  desiredInjectionLabel,
  namespaceKey,
  namespaceLabelPatch,
  namespaceOfKey,
  reconcileNamespace,
} from '../src/namespace';

const policy = { systemNamespace: 'outrigger-system', excluded: ['legacy'] };

function ns(name: string, annotation?: string, label?: string): NamespaceMeta {
  return {
    name,
    annotations: annotation === undefined ? {} : { [INJECT]: annotation, other: 'x' },
    labels: label === undefined ? { team: 'a' } : { [INJECTION_LABEL]: label, team: 'a' },
  };
}

describe('desiredInjectionLabel', () => {
  it.each([
    ['annotation enabled', ns('shop', ENABLED), ENABLED],
    ['annotation disabled', ns('shop', DISABLED), undefined],
    ['no annotation', ns('shop'), undefined],
    ['a value that is neither', ns('shop', 'yes'), undefined],
    ['annotation Enabled (case matters)', ns('shop', 'Enabled'), undefined],
    ['label alone does not opt in', ns('shop', undefined, ENABLED), undefined],
    ['own namespace', ns('outrigger-system', ENABLED), undefined],
    ['kube-system', ns('kube-system', ENABLED), undefined],
    ['kube-public', ns('kube-public', ENABLED), undefined],
    ['kube-node-lease', ns('kube-node-lease', ENABLED), undefined],
    ['excluded by the policy', ns('legacy', ENABLED), undefined],
  ])('%s', (_case, meta, want) => {
    expect(desiredInjectionLabel(meta, policy)).toBe(want);
  });
});

describe('namespaceLabelPatch', () => {
  const set = { metadata: { labels: { [INJECTION_LABEL]: ENABLED } } };
  const remove = { metadata: { labels: { [INJECTION_LABEL]: null } } };
  it.each([
    ['enabled, no label: set', ns('shop', ENABLED), set],
    ['enabled, label enabled: nothing', ns('shop', ENABLED, ENABLED), undefined],
    ['enabled, label disabled: set', ns('shop', ENABLED, DISABLED), set],
    ['disabled, label enabled: remove', ns('shop', DISABLED, ENABLED), remove],
    ['disabled, label disabled: remove', ns('shop', DISABLED, DISABLED), remove],
    ['disabled, no label: nothing', ns('shop', DISABLED), undefined],
    ['absent, no label: nothing', ns('shop'), undefined],
    ['absent, label enabled (stale mirror): remove', ns('shop', undefined, ENABLED), remove],
    ['system, label enabled: remove', ns('kube-system', ENABLED, ENABLED), remove],
    ['system, no label: nothing', ns('kube-system', ENABLED), undefined],
    ['own namespace, no label: nothing', ns('outrigger-system', ENABLED), undefined],
  ])('%s', (_case, meta, want) => {
    expect(namespaceLabelPatch(meta, policy)).toEqual(want);
  });

  it('carries the resourceVersion the decision was made on', () => {
    const meta = { ...ns('shop', ENABLED), resourceVersion: '42' };
    expect(namespaceLabelPatch(meta, policy)).toEqual({
      metadata: { labels: { [INJECTION_LABEL]: ENABLED }, resourceVersion: '42' },
    });
  });

  it('is settled once applied: the patched namespace needs no patch', () => {
    for (const meta of [ns('shop', ENABLED), ns('shop', DISABLED, ENABLED)]) {
      const patch = namespaceLabelPatch(meta, policy);
      const labels = { ...meta.labels, ...patch?.metadata.labels };
      const after = Object.fromEntries(Object.entries(labels).filter(([, v]) => v !== null));
      expect(
        namespaceLabelPatch({ ...meta, labels: after as Record<string, string> }, policy),
      ).toBe(undefined);
    }
  });
});

describe('namespace keys', () => {
  it('round-trips a name and refuses other kinds', () => {
    expect(namespaceKey('shop')).toBe('Namespace/shop');
    expect(namespaceOfKey(namespaceKey('shop'))).toBe('shop');
    expect(namespaceOfKey('Deployment/shop/web')).toBeUndefined();
  });
});

describe('reconcileNamespace', () => {
  const opted: V1Namespace = {
    metadata: { name: 'shop', resourceVersion: '7', annotations: { [INJECT]: ENABLED } },
  };

  function deps(patchNamespace: () => Promise<V1Namespace>, found = opted) {
    const written: string[] = [];
    return {
      written,
      deps: {
        api: { patch: patchNamespace } as unknown as Pick<KubeApi, 'patch'>,
        get: (name: string) => (name === found.metadata?.name ? found : undefined),
        policy,
        acquireWrite: () => Promise.resolve(),
        onWrite: (name: string) => written.push(name),
      },
    };
  }

  it('patches a namespace whose label differs', async () => {
    const patch = jest.fn(() => Promise.resolve(opted));
    const { deps: d, written } = deps(patch);
    expect(await reconcileNamespace('shop', d)).toEqual({ done: true });
    expect(written).toEqual(['shop']);
    expect(patch).toHaveBeenCalledTimes(1);
  });

  it('writes nothing for a namespace that agrees, or is gone', async () => {
    const patch = jest.fn(() => Promise.resolve(opted));
    const settled = { metadata: { ...opted.metadata, labels: { [INJECTION_LABEL]: ENABLED } } };
    expect(await reconcileNamespace('shop', deps(patch, settled).deps)).toEqual({ done: true });
    expect(await reconcileNamespace('gone', deps(patch).deps)).toEqual({ done: true });
    expect(patch).not.toHaveBeenCalled();
  });

  it('requeues on 409 (the cache is behind) and throws other errors to retry', async () => {
    const conflict = Object.assign(new Error('conflict'), { code: 409 });
    const c = deps(() => Promise.reject(conflict)).deps;
    expect(await reconcileNamespace('shop', c)).toEqual({ requeueAfterMs: CONFLICT_REQUEUE_MS });
    const forbidden = Object.assign(new Error('forbidden'), { code: 403 });
    await expect(
      reconcileNamespace('shop', deps(() => Promise.reject(forbidden)).deps),
    ).rejects.toBe(forbidden);
  });
});
