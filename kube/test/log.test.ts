// The JSON logger writes the lines winston's JSON format wrote for the webhook: one object a
// line, keys sorted (nested ones too), the component overridable by a field, and nothing built
// below the level.

import { jsonLogger, type LogLevel } from '../src/log';

/** A logger at `level` whose lines are kept, raw and parsed. */
function capture(level: LogLevel) {
  const written: string[] = [];
  const logger = jsonLogger({
    level,
    component: 'outrigger-webhook',
    write: (l) => written.push(l),
  });
  const lines = (): Record<string, unknown>[] =>
    written.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { logger, lines, text: () => written };
}

describe('jsonLogger', () => {
  it('writes one JSON object a line, keys sorted as winston wrote them', () => {
    const out = capture('info');
    out.logger.info('outrigger-webhook serving', { https: 8443, nested: { b: 1, a: 2 } });
    const [line] = out.text();
    expect(line).toMatch(/\n$/);
    expect(line).toMatch(
      /^\{"component":"outrigger-webhook","https":8443,"level":"info","message":"outrigger-webhook serving","nested":\{"a":2,"b":1\},"timestamp":"\d{4}-\d\d-\d\dT[\d:.]+Z"\}\n$/,
    );
  });

  it('drops lines below its level, and says whether debug is on', () => {
    const out = capture('warn');
    out.logger.info('not written');
    out.logger.debug('not written');
    out.logger.warn('written');
    out.logger.log('error', 'written too', { resource: 'namespaces' });
    expect(out.lines().map((l) => [l.level, l.message])).toEqual([
      ['warn', 'written'],
      ['error', 'written too'],
    ]);
    expect(out.logger.isDebugEnabled()).toBe(false);
    expect(capture('debug').logger.isDebugEnabled()).toBe(true);
  });

  it('writes an Error field as its message, and a line whose fields JSON cannot hold', () => {
    const out = capture('info');
    out.logger.error('request failed', { error: new Error('boom') });
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    out.logger.info('odd fields', { cycle });
    const [first, second] = out.lines();
    expect(first?.error).toBe('boom');
    expect(second?.message).toBe('odd fields');
    expect(String(second?.fields)).toMatch(/^not written: /);
  });

  it('keeps level, message and timestamp its own; a field may name another component', () => {
    const out = capture('info');
    out.logger.info('m', { level: 'x', message: 'y', component: 'other' });
    expect(out.lines()[0]).toMatchObject({ level: 'info', message: 'm', component: 'other' });
  });
});
