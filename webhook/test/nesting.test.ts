// A body nesting deeper than MAX_NESTING is refused with 400 before anything that may recurse
// over it reads it: a long text by a scan before parsing, a shorter one (every real review) by
// measuring the parsed value, which relies on V8's JSON.parse not recursing. Parsing a short
// deep text first buys a client nothing: a text of the same length made of arrays at a legal
// depth costs JSON.parse as much (`make bench-parse`, docs/benchmarks.md, "Body parsing").

import fc from 'fast-check';
import {
  MAX_NESTING,
  MAX_VALUES,
  jsonStructure,
  nestsDeeperThan,
  parseReview,
} from '../src/review';
import { realisticReview } from '@outrigger/testkit';

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A realistic review with `inner` as the value of a field nothing reads, padded to `length`. */
function reviewWith(inner: string, length = 0): string {
  const review = JSON.stringify(realisticReview('nesting'));
  const body = review.replace('"spec":{', `"spec":{"deep":${inner},`);
  const padding = Math.max(0, length - body.length);
  return padding === 0 ? body : body.replace('"spec":{', `"spec":{"pad":"${'x'.repeat(padding)}",`);
}

describe('nesting', () => {
  it('V8 parses text nested far deeper than the limit without recursing', () => {
    const parse = (): unknown => JSON.parse(nested(200_000));
    expect(parse).not.toThrow();
  });

  it('judges a parsed value as deep as the scan measures its text', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 1, max: 14 }).map(deepValue)),
        fc.integer({ min: 0, max: 14 }),
        (value, limit) => {
          const text = JSON.stringify(value);
          const parsed: unknown = JSON.parse(text);
          const deeper = typeof parsed === 'object' && parsed !== null;
          expect(deeper && nestsDeeperThan(parsed, limit)).toBe(jsonStructure(text).depth > limit);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('stops looking one level past the limit', () => {
    expect(nestsDeeperThan(JSON.parse(nested(50_000)) as object, MAX_NESTING)).toBe(true);
    expect(nestsDeeperThan(JSON.parse(nested(MAX_NESTING)) as object, MAX_NESTING)).toBe(false);
  });

  it.each([
    ['short', 0],
    ['long enough to be counted before parsing', MAX_VALUES + 10],
  ])('refuses a %s body one level too deep, and takes one at the limit', (_name, length) => {
    // The review, its request, the object and its spec: the inner value starts 4 levels down.
    const outer = 4;
    const atLimit = reviewWith(nested(MAX_NESTING - outer), length);
    const tooDeep = reviewWith(nested(MAX_NESTING - outer + 1), length);
    expect(atLimit.length >= MAX_VALUES).toBe(length > 0);
    expect(parseReview(atLimit).uid).toBe('nesting');
    expect(() => parseReview(tooDeep)).toThrow(
      `body nests arrays and objects deeper than ${MAX_NESTING} levels`,
    );
  });

  it('refuses a body that is nothing but nesting, object or array', () => {
    expect(() => parseReview(nested(30_000))).toThrow(/deeper than/);
    expect(() => parseReview(`${'{"a":'.repeat(30_000)}1${'}'.repeat(30_000)}`)).toThrow(
      /deeper than/,
    );
  });
});

/** Objects and arrays alternating, `depth` levels, the deepest one empty. */
function deepValue(depth: number): unknown {
  let value: unknown = depth % 2 === 0 ? [] : {};
  for (let level = depth - 1; level > 0; level--) value = level % 2 === 0 ? [value] : { a: value };
  return value;
}
