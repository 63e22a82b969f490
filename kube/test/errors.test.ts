// Which failures of a write are the API server refusing the request (held against the object)
// and which are trouble on the way (retried): only a 4xx that is about the request refuses it.
// And what an error says, with or without its HTTP status.

import { ApiException } from '@kubernetes/client-node';
import {
  ApiError,
  apiErrorMessage,
  apiErrorWithStatus,
  isConflict,
  isForbidden,
  isNotFound,
  isRefusal,
} from '../src';

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

describe('what an API error says', () => {
  const apiError = new ApiError(
    422,
    JSON.stringify({ kind: 'Status', message: 'ConfigMap "bad" is invalid' }),
    'POST /api/v1/namespaces/x/configmaps',
  );

  it('gives the Status message, after the HTTP status where that is asked for', () => {
    expect(apiErrorMessage(apiError)).toBe('ConfigMap "bad" is invalid');
    expect(apiErrorWithStatus(apiError)).toBe('HTTP 422: ConfigMap "bad" is invalid');
    expect(apiErrorWithStatus(status(409))).toBe(
      `HTTP 409: ${JSON.stringify({ kind: 'Status', code: 409 })}`,
    );
  });

  it('gives a body that is no Status document as it came, and other errors their message', () => {
    const proxy = new ApiException(502, 'Bad Gateway', '<html>bad gateway</html>', {});
    expect(apiErrorWithStatus(proxy)).toBe('HTTP 502: <html>bad gateway</html>');
    const unauthorized = new ApiException(401, 'Unauthorized', undefined, {});
    expect(apiErrorWithStatus(unauthorized)).toMatch(
      /^HTTP 401: HTTP-Code: 401\nMessage: Unauthorized/,
    );
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6443'), {
      code: 'ECONNREFUSED',
    });
    expect(apiErrorWithStatus(refused)).toBe('connect ECONNREFUSED 127.0.0.1:6443');
    expect(apiErrorWithStatus('a string')).toBe('a string');
  });

  it('tells not found, forbidden and conflict apart by status', () => {
    expect(
      [404, 403, 409].map((c) => [isNotFound, isForbidden, isConflict].map((f) => f(status(c)))),
    ).toEqual([
      [true, false, false],
      [false, true, false],
      [false, false, true],
    ]);
    expect(isNotFound(new Error('not found'))).toBe(false);
  });
});
