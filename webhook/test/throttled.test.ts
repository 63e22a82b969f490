// Throttled, the one way the webhook keeps a line that can repeat at any rate out of its log.

import { Throttled } from '../src/throttled';

function logged(intervalMs: number) {
  let now = 0;
  const lines: { topic: string | undefined; suppressed: number }[] = [];
  const throttled = new Throttled(intervalMs, () => now);
  return {
    lines,
    at: (ms: number) => (now = ms),
    run: (topic?: string) =>
      throttled.run((suppressed) => lines.push({ topic, suppressed }), topic),
    reset: () => throttled.reset(),
  };
}

describe('Throttled', () => {
  it('writes the first line at once, then one an interval, counting the rest into the next', () => {
    const t = logged(1000);
    t.run();
    t.at(10);
    t.run();
    t.at(999);
    t.run();
    t.at(1000);
    t.run();
    expect(t.lines).toEqual([
      { topic: undefined, suppressed: 0 },
      { topic: undefined, suppressed: 2 },
    ]);
  });

  it('writes a line about another topic at once, and holds a repeat of it as before', () => {
    const t = logged(60_000);
    t.run('file missing');
    t.at(1000);
    t.run('file missing');
    t.run('key missing');
    t.at(2000);
    t.run('key missing');
    expect(t.lines.map((l) => l.topic)).toEqual(['file missing', 'key missing']);
  });

  it('after a reset writes the next line at once, however soon', () => {
    const t = logged(60_000);
    t.run('file missing');
    t.at(5);
    t.reset();
    t.run('file missing');
    expect(t.lines).toEqual([
      { topic: 'file missing', suppressed: 0 },
      { topic: 'file missing', suppressed: 0 },
    ]);
  });
});
