// A body nesting deeper than MAX_NESTING is refused with 400 before anything that may recurse
// over it reads it: a long text by a scan before parsing, a shorter one (every real review) by
// measuring the parsed value, which relies on V8's JSON.parse not recursing.

import fc from 'fast-check';
import { MAX_NESTING, MAX_VALUES, jsonStructure, nestingDepth, parseReview } from '../src/review';
import { realisticReview } from './realistic-review';

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

  it('measures a parsed value as deep as the scan measures its text', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (value) => {
        const text = JSON.stringify(value);
        expect(nestingDepth(JSON.parse(text))).toBe(jsonStructure(text).depth);
      }),
      { numRuns: 500 },
    );
  });

  it('stops counting one level past the limit', () => {
    expect(nestingDepth(JSON.parse(nested(50_000)))).toBe(MAX_NESTING + 1);
    expect(nestingDepth(JSON.parse(nested(MAX_NESTING)))).toBe(MAX_NESTING);
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
});
