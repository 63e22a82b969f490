// Fixtures of the revision-history tests: configurations by tag, history entries, the API server's data patch.

import {
  configRevision,
  defaultConfig,
  encodeEntry,
  revisionContent,
  type Config,
  type HistoryEntry,
} from '../src';

export const NOW = Date.parse('2026-05-01T12:00:00Z');
export const SECOND = 1000;

/** A configuration that differs from the default in what a revision names: the proxy image. */
export function configWith(tag: string, extra: Partial<Config> = {}): Config {
  const base = defaultConfig();
  return { ...base, proxy: { ...base.proxy, image: `ghcr.io/outrigger/proxy:${tag}` }, ...extra };
}

export function entryOf(config: Config, acceptedAtMs: number): HistoryEntry {
  return { revision: configRevision(config), acceptedAtMs, content: revisionContent(config) };
}

/** A history of the given tags, the first the newest, a minute apart: as readHistory sorts. */
export const historyOf = (tags: readonly string[]): HistoryEntry[] =>
  tags.map((tag, i) => entryOf(configWith(tag), NOW - (i + 1) * 60 * SECOND));

/** What the API server does with a merge patch of `data`: null deletes the key. */
export function applyDataPatch(
  data: Record<string, string>,
  patch: Record<string, string | null> | undefined,
): Record<string, string> {
  const out = { ...data };
  for (const [k, v] of Object.entries(patch ?? {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

export const dataOf = (entries: readonly HistoryEntry[]): Record<string, string> =>
  Object.fromEntries(entries.map((e) => [e.revision, encodeEntry(e)]));

export const revisions = (entries: readonly HistoryEntry[]): string[] =>
  entries.map((e) => e.revision);
export const rev = (tag: string): string => configRevision(configWith(tag));
