// chooseRevision: which configuration revision a pod is injected from, by its pin and the history.

import fc from 'fast-check';
import {
  chooseRevision,
  configRevision,
  injectPod,
  makeSnapshot,
  pinnedSnapshot,
  type ConfigSnapshot,
  type PodLike,
} from '../src';

import { NOW, SECOND, configWith, entryOf, historyOf, rev } from './revision-history-fixtures';

describe('chooseRevision', () => {
  const current = makeSnapshot(configWith('2.0.0', { excludeNamespaces: ['legacy'] }));
  const oldConfig = configWith('1.0.0');
  const history = [entryOf(oldConfig, NOW - 3600 * SECOND)];
  const pinned = (revision: string): ConfigSnapshot | undefined => {
    const e = history.find((h) => h.revision === revision);
    return e && pinnedSnapshot(current, e.content);
  };

  it.each<[string, string | undefined, string]>([
    ['an unstamped pod gets the current revision', undefined, 'current'],
    ['a pod stamped with the current revision gets it', current.revision, 'current'],
    [
      'a pod stamped with a revision in the history is pinned to it',
      configRevision(oldConfig),
      'pinned',
    ],
    [
      'a pod stamped with a revision the history does not hold falls back',
      'abcdef0123',
      'fallback',
    ],
  ])('%s', (_name, requested, rule) => {
    const choice = chooseRevision(requested, current, pinned);
    expect(choice.rule).toBe(rule);
    if (choice.rule === 'fallback') expect(choice.requested).toBe(requested);
  });

  it('a pinned snapshot injects the entry proxy image, with the current exclusions and rollout', () => {
    const choice = chooseRevision(configRevision(oldConfig), current, pinned);
    expect(choice.snapshot.revision).toBe(configRevision(oldConfig));
    expect(choice.snapshot.config.proxy.image).toBe('ghcr.io/outrigger/proxy:1.0.0');
    expect(choice.snapshot.config.excludeNamespaces).toEqual(['legacy']);
    expect(choice.snapshot.config.rollout).toEqual(current.config.rollout);

    const pod: PodLike = {
      metadata: { name: 'web-1' },
      spec: { containers: [{ name: 'app', image: 'web:1' }] },
    };
    const inject = (namespaceName: string) =>
      injectPod({
        pod,
        snapshot: choice.snapshot,
        namespaceName,
        namespace: 'assume-enabled',
        nativeSidecarSupported: true,
      });
    const injected = inject('shop');
    if (!injected.injected) throw new Error(`expected injection: ${injected.detail}`);
    const images = JSON.stringify(injected.patch);
    expect(images).toContain('ghcr.io/outrigger/proxy:1.0.0');
    expect(images).not.toContain('ghcr.io/outrigger/proxy:2.0.0');
    expect(images).toContain(`"${configRevision(oldConfig)}"`);
    // The namespace the current configuration excludes stays excluded for a pinned pod: an
    // exclusion is the current word of the admin, not part of the old revision.
    expect(inject('legacy')).toMatchObject({ injected: false });
  });

  it('property: the chosen snapshot has the requested revision exactly when the history holds it or it is current', () => {
    const tag = fc.stringMatching(/^[0-9]{1,2}\.[0-9]$/);
    const requestArb = (tags: string[]) =>
      fc.oneof(
        fc.constant(undefined),
        fc.constant('current' as const),
        fc.constantFrom(...tags, 'never-recorded'),
        fc.stringMatching(/^[0-9a-f]{10}$/),
      );
    const scenario = fc
      .record({ currentTag: tag, historyTags: fc.uniqueArray(tag, { maxLength: 6 }) })
      .chain((s) =>
        fc.record({ s: fc.constant(s), request: requestArb([...s.historyTags, s.currentTag]) }),
      );
    fc.assert(
      fc.property(scenario, ({ s, request }) => {
        const snapshot = makeSnapshot(configWith(s.currentTag, { excludeNamespaces: ['legacy'] }));
        const entries = historyOf(s.historyTags);
        const lookup = (r: string) => {
          const e = entries.find((h) => h.revision === r);
          return e && pinnedSnapshot(snapshot, e.content);
        };
        const requested =
          request === undefined
            ? undefined
            : request === 'current'
              ? snapshot.revision
              : tagOrHash(request);
        const choice = chooseRevision(requested, snapshot, lookup);
        const held = requested !== undefined && entries.some((e) => e.revision === requested);
        if (requested === undefined) {
          // Unstamped pods (bare pods, unstamped owners) always get the current configuration.
          expect(choice).toEqual({ rule: 'current', snapshot });
          return;
        }
        expect(choice.snapshot.revision === requested).toBe(
          held || requested === snapshot.revision,
        );
        // Whatever the revision, the namespace exclusions are the current ones.
        expect(choice.snapshot.config.excludeNamespaces).toEqual(['legacy']);
        if (choice.rule === 'fallback') {
          expect(choice.snapshot).toBe(snapshot);
          expect(held).toBe(false);
        }
      }),
    );
  });
});

/** A tag names a configuration of the test (its revision); anything else is taken as is. */
function tagOrHash(value: string): string {
  return /^[0-9a-f]{10}$/.test(value) ? value : rev(value);
}
