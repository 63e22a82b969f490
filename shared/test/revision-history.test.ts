// The revision history (shared/src/config/revision-history.ts): the controller records each accepted
// configuration in a ConfigMap, and the webhook gives a pod the revision its template is
// stamped with while the history holds it. The rules checked here: what is written reads back
// the same; an entry is what its key says or it is left out, named; the history is bounded by
// count and by size, dropping the oldest first but never a kept revision or the current one;
// and the choice of configuration for a pod (chooseRevision) is pinned exactly when it can be.

import fc from 'fast-check';
import {
  HISTORY_MAX_BYTES,
  MAX_HISTORY,
  configRevision,
  defaultConfig,
  encodeEntry,
  historyDataPatch,
  readHistory,
  type HistoryEntry,
} from '../src';

import {
  NOW,
  SECOND,
  configWith,
  entryOf,
  historyOf,
  applyDataPatch,
  dataOf,
  revisions,
  rev,
} from './revision-history-fixtures';

describe('the history ConfigMap reads back what was written', () => {
  it('round-trips historyDataPatch -> data -> readHistory, newest first', () => {
    const a = configWith('1.0.0');
    const b = configWith('1.1.0');
    let data: Record<string, string> = {};
    const update = { limit: 10, keep: [] };

    data = applyDataPatch(
      data,
      historyDataPatch({
        ...update,
        history: [],
        config: a,
        revision: configRevision(a),
        nowMs: NOW,
      }),
    );
    const first = readHistory(data);
    expect(first).toEqual({ entries: [entryOf(a, NOW)], problems: [], invalid: [] });

    const later = NOW + 60 * SECOND;
    data = applyDataPatch(
      data,
      historyDataPatch({
        ...update,
        history: first.entries,
        config: b,
        revision: configRevision(b),
        nowMs: later,
      }),
    );
    expect(readHistory(data)).toEqual({
      entries: [entryOf(b, later), entryOf(a, NOW)],
      problems: [],
      invalid: [],
    });
  });

  it('writes nothing when the revision is recorded already', () => {
    const a = configWith('1.0.0');
    const history = [entryOf(a, NOW)];
    expect(
      historyDataPatch({
        history,
        config: a,
        revision: configRevision(a),
        nowMs: NOW + 1000,
        limit: 10,
        keep: [],
      }),
    ).toBeUndefined();
  });

  it('keeps only what a revision names: rollout settings and exclusions are not recorded', () => {
    const a = configWith('1.0.0', { excludeNamespaces: ['legacy'] });
    const patch = historyDataPatch({
      history: [],
      config: a,
      revision: configRevision(a),
      nowMs: NOW,
      limit: 10,
      keep: [],
    });
    const text = patch?.[configRevision(a)] ?? '';
    const parsed = JSON.parse(text) as { acceptedAt: string; content: Record<string, unknown> };
    expect(parsed.acceptedAt).toBe('2026-05-01T12:00:00Z');
    expect(Object.keys(parsed.content).sort()).toEqual([
      'init',
      'nativeSidecar',
      'overrides',
      'proxy',
    ]);
  });

  it('reads no ConfigMap, or an empty one, as an empty history', () => {
    expect(readHistory(undefined)).toEqual({ entries: [], problems: [], invalid: [] });
    expect(readHistory({})).toEqual({ entries: [], problems: [], invalid: [] });
  });

  it('orders entries accepted at the same second by revision, so every replica agrees', () => {
    const [x, y] = [entryOf(configWith('x'), NOW), entryOf(configWith('y'), NOW)];
    const sorted = [x, y].map((e) => e.revision).sort();
    expect(revisions(readHistory(dataOf([x, y])).entries)).toEqual(sorted);
    expect(revisions(readHistory(dataOf([y, x])).entries)).toEqual(sorted);
  });
});

describe('an entry that is not what its key says is left out, and named', () => {
  const good = entryOf(configWith('1.0.0'), NOW);
  const other = entryOf(configWith('2.0.0'), NOW);

  it.each<[string, Record<string, string>, RegExp]>([
    [
      'content of another revision under a key (a hand edit or a copy)',
      { [good.revision]: encodeEntry(other) },
      new RegExp(`^entry ${good.revision} holds the configuration of revision ${other.revision}$`),
    ],
    [
      'text that is not JSON',
      { [good.revision]: '{not json' },
      new RegExp(`^entry ${good.revision} is not JSON$`),
    ],
    [
      'JSON that is not an object',
      { [good.revision]: '[1,2]' },
      new RegExp(`^entry ${good.revision} is not a JSON object$`),
    ],
    [
      'an entry without acceptedAt',
      { [good.revision]: JSON.stringify({ content: good.content }) },
      new RegExp(`^entry ${good.revision} is not an accepted configuration`),
    ],
    [
      'content that is not a valid configuration',
      {
        [good.revision]: JSON.stringify({
          acceptedAt: '2026-05-01T12:00:00Z',
          content: { proxy: { uid: -1 } },
        }),
      },
      new RegExp(`^entry ${good.revision} is not an accepted configuration`),
    ],
  ])('%s', (_name, bad, problem) => {
    const data = { ...bad, [other.revision]: encodeEntry(other) };
    const history = readHistory(data);
    // The good entry beside it is still read.
    expect(revisions(history.entries)).toEqual([other.revision]);
    expect(history.problems).toHaveLength(1);
    expect(history.problems[0]).toMatch(problem);
  });
});

describe('the history is bounded', () => {
  const current = configWith('9.0.0');
  const update = (history: HistoryEntry[], limit: number, keep: string[] = []) =>
    historyDataPatch({
      history,
      config: current,
      revision: configRevision(current),
      nowMs: NOW,
      limit,
      keep,
    });
  /** What the history holds once the patch is applied. */
  const after = (history: HistoryEntry[], limit: number, keep: string[] = []) =>
    revisions(readHistory(applyDataPatch(dataOf(history), update(history, limit, keep))).entries);

  it('to `limit` entries, the current one included, dropping the oldest first', () => {
    // Newest first: c was accepted last.
    const history = historyOf(['c', 'b', 'a']);
    expect(update(history, 3)).toEqual({
      [configRevision(current)]: expect.any(String),
      [rev('a')]: null,
    });
    expect(after(history, 3)).toEqual([configRevision(current), rev('c'), rev('b')]);
    expect(after(history, 2)).toEqual([configRevision(current), rev('c')]);
  });

  it('never drops a kept revision (the last good one): the next oldest goes instead', () => {
    const history = historyOf(['c', 'b', 'a']);
    expect(after(history, 3, [rev('a')])).toEqual([configRevision(current), rev('c'), rev('a')]);
    expect(after(history, 2, [rev('a')])).toEqual([configRevision(current), rev('a')]);
  });

  it('keeps more than `limit` rather than drop the current or a kept revision', () => {
    const history = historyOf(['b', 'a']);
    expect(after(history, 2, [rev('a'), rev('b')])).toEqual([
      configRevision(current),
      rev('b'),
      rev('a'),
    ]);
  });

  it('drops nothing while under the limit', () => {
    const history = historyOf(['b', 'a']);
    expect(update(history, 10)).toEqual({ [configRevision(current)]: expect.any(String) });
  });

  it('to HISTORY_MAX_BYTES, dropping the oldest first even under the count limit', () => {
    // Entries of about 300 KiB each (a long argument list): three of them and the current one
    // do not fit in 900 KiB.
    const big = (tag: string, i: number): HistoryEntry => {
      const base = configWith(tag);
      const config = {
        ...base,
        proxy: { ...base.proxy, args: [`--note=${'x'.repeat(300 * 1024)}`] },
      };
      return entryOf(config, NOW - (i + 1) * 60 * SECOND);
    };
    const history = ['c', 'b', 'a'].map(big);
    const patch = update(history, 50);
    const data = applyDataPatch(dataOf(history), patch);
    expect(Object.keys(data).sort()).toEqual(
      [configRevision(current), history[0]?.revision, history[1]?.revision].sort(),
    );
    const bytes = Object.entries(data).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(bytes).toBeLessThanOrEqual(HISTORY_MAX_BYTES);
    // A kept revision stays even past the size bound.
    const keptOldest = applyDataPatch(
      dataOf(history),
      update(history, 50, [history[2]?.revision ?? '']),
    );
    expect(Object.keys(keptOldest)).toContain(history[2]?.revision);
    expect(Object.keys(keptOldest)).not.toContain(history[1]?.revision);
  });

  it('holds at least MAX_HISTORY entries of the default configuration within HISTORY_MAX_BYTES', () => {
    const entry = entryOf(defaultConfig(), NOW);
    const bytes = entry.revision.length + encodeEntry(entry).length;
    // At this writing an entry of the default configuration is 1473 bytes with its key, so
    // 625 of them fit in HISTORY_MAX_BYTES (921,600 bytes): the count limit (at most
    // MAX_HISTORY = 50) binds long before the size bound for configurations of this size.
    const fit = Math.floor(HISTORY_MAX_BYTES / bytes);
    expect(fit).toBeGreaterThanOrEqual(MAX_HISTORY);
    expect(fit).toBeGreaterThanOrEqual(50);
  });

  it('property: after the patch, the current and kept revisions are there, and what was dropped is older than what stayed', () => {
    const tags = fc.uniqueArray(fc.stringMatching(/^[0-9]{1,3}\.[0-9]{1,2}$/), { maxLength: 12 });
    fc.assert(
      fc.property(
        tags,
        fc.integer({ min: 2, max: 12 }),
        fc.array(fc.nat(12), { maxLength: 3 }),
        (t, limit, keepAt) => {
          const history = historyOf(t);
          const keep = keepAt.flatMap((i) => (history[i] ? [history[i].revision] : []));
          const current = configWith('current');
          const patch = historyDataPatch({
            history,
            config: current,
            revision: configRevision(current),
            nowMs: NOW,
            limit,
            keep,
          });
          const left = readHistory(applyDataPatch(dataOf(history), patch)).entries;
          const kept = new Set(revisions(left));
          expect(kept.has(configRevision(current))).toBe(true);
          for (const k of keep) expect(kept.has(k)).toBe(true);
          // Bounded, unless the current and kept revisions alone are more than the limit.
          expect(left.length).toBeLessThanOrEqual(
            Math.max(limit, new Set([configRevision(current), ...keep]).size),
          );
          // Under the limit nothing is dropped; at it, exactly the limit remain.
          expect(left.length).toBe(
            Math.max(
              Math.min(history.length + 1, limit),
              new Set([configRevision(current), ...keep]).size,
            ),
          );
          // Oldest first: every dropped entry that was not kept is older than every survivor
          // that is not kept.
          const dropped = history.filter((e) => !kept.has(e.revision));
          const survivors = left.filter(
            (e) => !keep.includes(e.revision) && e.revision !== configRevision(current),
          );
          for (const d of dropped)
            for (const s of survivors) expect(d.acceptedAtMs).toBeLessThan(s.acceptedAtMs);
        },
      ),
    );
  });
});

// ---------------------------------------------------------------------------------------------
// Which configuration a pod gets.

describe('entries that cannot be read', () => {
  it('are dropped with the next write of the history', () => {
    const config = defaultConfig();
    const revision = configRevision(config);
    const read = readHistory({ bogus: 'not json', [revision + 'x']: '{}' });
    expect(new Set(read.invalid)).toEqual(new Set(['bogus', `${revision}x`]));
    const patch = historyDataPatch({
      history: read.entries,
      config,
      revision,
      nowMs: 0,
      limit: 10,
      keep: [],
      invalid: read.invalid,
    });
    expect(patch).toMatchObject({ bogus: null, [`${revision}x`]: null });
    expect(typeof patch?.[revision]).toBe('string');
  });
});

describe('a lower limit', () => {
  it('trims the history at once, without waiting for a new revision', () => {
    const base = defaultConfig();
    const configs = [1, 2, 3, 4].map((n) => ({
      ...base,
      proxy: { ...base.proxy, env: [{ name: 'STEP', value: String(n) }] },
    }));
    let data: Record<string, string> = {};
    configs.forEach((config, i) => {
      const patch = historyDataPatch({
        history: readHistory(data).entries,
        config,
        revision: configRevision(config),
        nowMs: NOW + i * 1000,
        limit: 10,
        keep: [],
      });
      data = Object.fromEntries(
        Object.entries({ ...data, ...patch }).filter((e): e is [string, string] => e[1] !== null),
      );
    });
    const current = configs[3] ?? base;
    const trim = historyDataPatch({
      history: readHistory(data).entries,
      config: current,
      revision: configRevision(current),
      nowMs: NOW + 10_000,
      limit: 2,
      keep: [],
    });
    // the two oldest go; the current one is not written again
    expect(trim).toEqual({
      [configRevision(configs[0] ?? base)]: null,
      [configRevision(configs[1] ?? base)]: null,
    });
    expect(
      historyDataPatch({
        history: readHistory(data).entries,
        config: current,
        revision: configRevision(current),
        nowMs: NOW,
        limit: 10,
        keep: [],
      }),
    ).toBeUndefined();
  });
});

describe('a hostile entry', () => {
  it('nested past the stack is refused as an entry, never thrown', () => {
    const deep = `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`;
    const text = `{"acceptedAt":"2026-05-01T12:00:00Z","content":{"proxy":{"securityContext":${deep}}}}`;
    const read = readHistory({ abc: text });
    expect(read.entries).toEqual([]);
    expect(read.invalid).toEqual(['abc']);
  });
});
