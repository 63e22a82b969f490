// Label selectors (shared/src/kubernetes/selector.ts) pick the canary owners, so they must mean what
// `kubectl get -l` and every other Kubernetes selector mean: each term must hold, an empty
// selector matches everything, and NotIn and DoesNotExist hold for a label that is absent.
// A selector the API server would reject must be rejected by the configuration too, with the
// YAML path of the bad part.

import { matchesSelector, mustParseConfig, parseConfig, type LabelSelector } from '../src';
import type { Labels } from '../src';

const labels: Labels = { app: 'web', tier: 'frontend', 'example.com/team': 'shop', empty: '' };

describe('matchesSelector: every term must hold', () => {
  it.each<[string, LabelSelector, Labels | undefined, boolean]>([
    // An empty selector selects everything, as in a Deployment's or a webhook's selector.
    ['the empty selector matches any labels', {}, labels, true],
    ['the empty selector matches an object without labels', {}, undefined, true],
    ['empty matchLabels and matchExpressions', { matchLabels: {}, matchExpressions: [] }, {}, true],

    ['matchLabels: the same value', { matchLabels: { app: 'web' } }, labels, true],
    ['matchLabels: another value', { matchLabels: { app: 'api' } }, labels, false],
    ['matchLabels: the key is absent', { matchLabels: { zone: 'a' } }, labels, false],
    ['matchLabels: no labels at all', { matchLabels: { app: 'web' } }, undefined, false],
    ['matchLabels: a prefixed key', { matchLabels: { 'example.com/team': 'shop' } }, labels, true],
    ['matchLabels: an empty value', { matchLabels: { empty: '' } }, labels, true],
    [
      'matchLabels: every pair must hold, not just one',
      { matchLabels: { app: 'web', tier: 'backend' } },
      labels,
      false,
    ],

    [
      'In: the value is listed',
      { matchExpressions: [req('tier', 'In', 'a', 'frontend')] },
      labels,
      true,
    ],
    [
      'In: the value is not listed',
      { matchExpressions: [req('tier', 'In', 'backend')] },
      labels,
      false,
    ],
    ['In: the key is absent', { matchExpressions: [req('zone', 'In', 'a')] }, labels, false],
    // An absent label is not a label with an empty value.
    ['In [""]: the key is absent', { matchExpressions: [req('zone', 'In', '')] }, labels, false],
    [
      'In [""]: the key has the empty value',
      { matchExpressions: [req('empty', 'In', '')] },
      labels,
      true,
    ],

    [
      'NotIn: the value is not listed',
      { matchExpressions: [req('tier', 'NotIn', 'backend')] },
      labels,
      true,
    ],
    [
      'NotIn: the value is listed',
      { matchExpressions: [req('tier', 'NotIn', 'x', 'frontend')] },
      labels,
      false,
    ],
    // Kubernetes: NotIn holds for objects that do not have the label at all.
    ['NotIn: the key is absent', { matchExpressions: [req('zone', 'NotIn', 'a')] }, labels, true],
    ['NotIn: no labels at all', { matchExpressions: [req('zone', 'NotIn', 'a')] }, undefined, true],

    ['Exists: present', { matchExpressions: [req('tier', 'Exists')] }, labels, true],
    [
      'Exists: present with the empty value',
      { matchExpressions: [req('empty', 'Exists')] },
      labels,
      true,
    ],
    ['Exists: absent', { matchExpressions: [req('zone', 'Exists')] }, labels, false],
    // Keys are looked up as own properties: an Object.prototype name is not a label.
    [
      'Exists: a prototype property is not a label',
      { matchExpressions: [req('constructor', 'Exists')] },
      {},
      false,
    ],
    [
      'matchLabels: a prototype property is not a label',
      { matchLabels: { toString: 'x' } },
      {},
      false,
    ],

    ['DoesNotExist: absent', { matchExpressions: [req('zone', 'DoesNotExist')] }, labels, true],
    ['DoesNotExist: present', { matchExpressions: [req('tier', 'DoesNotExist')] }, labels, false],
    [
      'DoesNotExist: no labels at all',
      { matchExpressions: [req('tier', 'DoesNotExist')] },
      undefined,
      true,
    ],
    [
      'DoesNotExist: a prototype property',
      { matchExpressions: [req('constructor', 'DoesNotExist')] },
      {},
      true,
    ],

    [
      'matchLabels and matchExpressions together: both must hold',
      { matchLabels: { app: 'web' }, matchExpressions: [req('tier', 'In', 'backend')] },
      labels,
      false,
    ],
    [
      'matchLabels and several expressions, all holding',
      {
        matchLabels: { app: 'web' },
        matchExpressions: [
          req('tier', 'In', 'frontend'),
          req('zone', 'DoesNotExist'),
          req('app', 'Exists'),
        ],
      },
      labels,
      true,
    ],
    [
      'several expressions, one failing',
      { matchExpressions: [req('tier', 'Exists'), req('app', 'NotIn', 'web')] },
      labels,
      false,
    ],
  ])('%s', (_name, selector, subject, expected) => {
    expect(matchesSelector(selector, subject)).toBe(expected);
  });
});

function req(
  key: string,
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist',
  ...values: string[]
): NonNullable<LabelSelector['matchExpressions']>[number] {
  return values.length > 0 ? { key, operator, values } : { key, operator };
}

describe('selectors in the configuration', () => {
  /** The configuration with the given YAML lines under rollout.canary.ownerSelector. */
  const withOwnerSelector = (...lines: string[]): string =>
    ['rollout:', '  canary:', '    ownerSelector:', ...lines.map((l) => `      ${l}`)].join('\n');

  it('reads a valid selector into its typed form', () => {
    const config = mustParseConfig(
      withOwnerSelector(
        'matchLabels:',
        '  tier: canary',
        '  "example.com/ring": "0"',
        'matchExpressions:',
        '  - {key: app, operator: In, values: [web, api]}',
        '  - {key: legacy, operator: DoesNotExist}',
      ),
    );
    expect(config.rollout.canary.ownerSelector).toEqual({
      matchLabels: { tier: 'canary', 'example.com/ring': '0' },
      matchExpressions: [
        { key: 'app', operator: 'In', values: ['web', 'api'] },
        { key: 'legacy', operator: 'DoesNotExist' },
      ],
    });
    // Absent selectors stay absent: the planner reads absent as "matches every owner".
    expect(mustParseConfig('').rollout.canary.ownerSelector).toBeUndefined();
    expect(mustParseConfig('').rollout.canary.namespaceSelector).toBeUndefined();
  });

  const P = '.rollout.canary.ownerSelector';
  it.each<[string, string[], string, RegExp]>([
    ['a selector that is not a mapping', ['"app=web"'], P, /must be a mapping/],
    [
      'a misspelt field',
      ['matchLabel: {app: web}'],
      `${P}.matchLabel`,
      /unknown field; allowed here: matchLabels, matchExpressions/,
    ],
    ['matchLabels that is a list', ['matchLabels: [app]'], `${P}.matchLabels`, /must be a mapping/],
    [
      'a label value that YAML reads as a number',
      ['matchLabels: {ring: 1}'],
      `${P}.matchLabels.ring`,
      /must be a label value \(quote it: "true", "1"\); got number 1/,
    ],
    [
      'a label value that YAML reads as a boolean',
      ['matchLabels: {canary: true}'],
      `${P}.matchLabels.canary`,
      /must be a label value/,
    ],
    [
      'a label value longer than 63 characters',
      [`matchLabels: {app: ${'a'.repeat(64)}}`],
      `${P}.matchLabels.app`,
      /must be a label value/,
    ],
    [
      'a label value with a character labels do not allow',
      ['matchLabels: {app: "web app"}'],
      `${P}.matchLabels.app`,
      /must be a label value/,
    ],
    [
      'a label key that is not one',
      ['matchLabels: {"-app": web}'],
      `${P}.matchLabels.-app`,
      /is not a label key/,
    ],
    [
      'an operator Kubernetes does not have',
      ['matchExpressions: [{key: app, operator: Equals, values: [web]}]'],
      `${P}.matchExpressions[0].operator`,
      /must be one of In, NotIn, Exists, DoesNotExist; got string "Equals"/,
    ],
    [
      'In without values',
      ['matchExpressions: [{key: app, operator: In}]'],
      `${P}.matchExpressions[0].values`,
      /must list at least one value for operator In/,
    ],
    [
      'NotIn with an empty list of values',
      ['matchExpressions: [{key: app, operator: NotIn, values: []}]'],
      `${P}.matchExpressions[0].values`,
      /must list at least one value for operator NotIn/,
    ],
    [
      'Exists with values',
      ['matchExpressions: [{key: app, operator: Exists, values: [web]}]'],
      `${P}.matchExpressions[0].values`,
      /must be empty for operator Exists/,
    ],
    [
      'DoesNotExist with values',
      ['matchExpressions: [{key: app, operator: DoesNotExist, values: [web]}]'],
      `${P}.matchExpressions[0].values`,
      /must be empty for operator DoesNotExist/,
    ],
    [
      'an expression without a key',
      ['matchExpressions: [{operator: Exists}]'],
      `${P}.matchExpressions[0]`,
      /must have a key and an operator/,
    ],
    [
      'an expression with a bad key, second in the list',
      [
        'matchExpressions:',
        '  - {key: app, operator: Exists}',
        '  - {key: "a b", operator: Exists}',
      ],
      `${P}.matchExpressions[1].key`,
      /must be a label key such as app or example.com\/tier; got "a b"/,
    ],
    [
      'a bad value in the values of In',
      ['matchExpressions: [{key: app, operator: In, values: [web, "no spaces"]}]'],
      `${P}.matchExpressions[0].values[1]`,
      /must be a label value/,
    ],
  ])('rejects %s, naming the YAML path', (_name, lines, path, message) => {
    const result = parseConfig(withOwnerSelector(...lines));
    if (result.ok) throw new Error('expected the configuration to be rejected');
    expect(result.errors).toContainEqual(
      expect.objectContaining({ path, message: expect.stringMatching(message) }),
    );
  });

  it('names the line of the bad part, so the admin finds it in a long document', () => {
    const result = parseConfig(
      withOwnerSelector('matchExpressions:', '  - {key: app, operator: Equals}'),
    );
    if (result.ok) throw new Error('expected the configuration to be rejected');
    expect(result.errors).toContainEqual(
      expect.objectContaining({ path: `${P}.matchExpressions[0].operator`, line: 5 }),
    );
  });

  // Label keys usually contain dots (app.kubernetes.io/name): such a key is quoted in brackets,
  // so the path says where the value is and the error still finds its line.
  it('names the path and line of a bad value under a label key with dots', () => {
    const result = parseConfig(withOwnerSelector('matchLabels:', '  app.kubernetes.io/name: 1'));
    if (result.ok) throw new Error('expected the configuration to be rejected');
    expect(result.errors).toContainEqual(
      expect.objectContaining({ path: `${P}.matchLabels["app.kubernetes.io/name"]`, line: 5 }),
    );
  });

  it('checks the namespace selector by the same rules', () => {
    const result = parseConfig(
      ['rollout:', '  canary:', '    namespaceSelector:', '      matchLabels: {env: 1}'].join('\n'),
    );
    expect(result).toMatchObject({
      ok: false,
      errors: [
        {
          path: '.rollout.canary.namespaceSelector.matchLabels.env',
          message: expect.stringMatching(/must be a label value/),
        },
      ],
    });
  });
});
