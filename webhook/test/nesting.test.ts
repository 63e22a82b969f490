// A body nesting deeper than MAX_NESTING is refused before JSON.parse runs, whatever its size.
// V8's JSON.parse does not recurse, but it is slow on deep arrays (about 10 ms for 64 KiB of
// them on this project's machines, against 0.03 ms for the scan): parsing first and measuring
// the value after, as was tried, let any client buy 10 ms of the main thread per small request.

import { MAX_NESTING, parseReview } from '../src/review';
import { realisticReview } from './realistic-review';

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A realistic review with `inner` as the value of a field nothing reads. */
const reviewWith = (inner: string): string =>
  JSON.stringify(realisticReview('nesting')).replace('"spec":{', `"spec":{"deep":${inner},`);

describe('nesting', () => {
  afterEach(() => jest.restoreAllMocks());

  it('refuses a short body one level too deep without parsing it, and takes one at the limit', () => {
    // The review, its request, the object and its spec: the inner value starts 4 levels down.
    const outer = 4;
    const parse = jest.spyOn(JSON, 'parse');
    expect(() => parseReview(reviewWith(nested(MAX_NESTING - outer + 1)))).toThrow(
      `body nests arrays and objects deeper than ${MAX_NESTING} levels`,
    );
    expect(() => parseReview(nested(30_000))).toThrow(/deeper than/);
    expect(parse).not.toHaveBeenCalled();
    expect(parseReview(reviewWith(nested(MAX_NESTING - outer))).uid).toBe('nesting');
  });
});
