// The namespace decision: which label each namespace should carry, and the patch (or none).

import { DISABLED, ENABLED, INJECT, INJECTION_LABEL, type NamespaceMeta } from '@outrigger/shared';
import {
  desiredInjectionLabel,
  namespaceKey,
  namespaceLabelPatch,
  namespaceOfKey,
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
