// Which failures of a write are the API server refusing the request (held against the object)
// and which are trouble on the way (retried): only a 4xx that is about the request refuses it.

import { ApiException } from '@kubernetes/client-node';
import { isConflict, isRefusal } from '../src';

const status = (code: number): ApiException<string> =>
  new ApiException(code, 'status', JSON.stringify({ kind: 'Status', code }), {});

describe('isRefusal', () => {
  it.each([
    [400, true],
    [403, true],
    [404, true],
    [422, true],
    [401, false],
    [408, false],
    [409, false],
    [429, false],
    [500, false],
    [503, false],
    [504, false],
  ])('HTTP %i: %s', (code, refused) => {
    expect(isRefusal(status(code))).toBe(refused);
  });

  it('is false for errors without a status: a connection refused or reset, a fetch that failed', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), {
      code: 'ECONNREFUSED',
    });
    const failed = new TypeError('fetch failed', { cause: refused });
    const aborted = new DOMException('The operation was aborted', 'TimeoutError');
    for (const err of [refused, failed, aborted, 'a string', undefined])
      expect(isRefusal(err)).toBe(false);
  });

  it('never calls a conflict a refusal', () => {
    expect(isConflict(status(409))).toBe(true);
    expect(isRefusal(status(409))).toBe(false);
  });
});
