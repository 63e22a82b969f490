// The controller's JSON logs say why something failed: an error passed in a log line's fields
// (the work queue's "reconcile failed; retrying", for one) is written as its message, never as
// the `{}` JSON makes of an Error. The chaos loop found every retry during an API server restart
// logged as `"error":{}`.

import { createLogger } from '../src/log';

/** A logger as main makes it, writing its lines into `lines`. */
function capture(lines: Record<string, unknown>[]) {
  return createLogger('debug', (line) => lines.push(JSON.parse(line) as Record<string, unknown>));
}

describe('createLogger', () => {
  it('writes an error among the fields as its message, with its cause', () => {
    const lines: Record<string, unknown>[] = [];
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:28443'), {
      code: 'ECONNREFUSED',
    });
    capture(lines).warn('reconcile failed; retrying', {
      key: 'Wave',
      error: new TypeError('fetch failed', { cause: refused }),
    });
    expect(lines).toEqual([
      expect.objectContaining({
        key: 'Wave',
        error: 'fetch failed: connect ECONNREFUSED 127.0.0.1:28443',
      }),
    ]);
  });

  it("writes an API error as the server's message", () => {
    const lines: Record<string, unknown>[] = [];
    const apiError = Object.assign(new Error('HTTP-Code: 422'), {
      code: 422,
      body: JSON.stringify({ message: 'deployments.apps "web" is forbidden: refused by policy' }),
    });
    capture(lines).error('reconcile failed for good', { error: apiError });
    expect(lines[0]?.error).toBe('deployments.apps "web" is forbidden: refused by policy');
  });

  it('leaves fields that are not errors alone, and the message an error logged by itself', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = capture(lines);
    logger.info('configuration in force', { revision: 'abc', nested: { a: 1 } });
    expect(lines[0]).toMatchObject({ revision: 'abc', nested: { a: 1 } });
  });
});
