// The revision history: the accepted configurations a pod may still be pinned to. The controller
// keeps it in a ConfigMap beside the configuration (`<name>-history`, one key per revision); the
// webhook reads it to give a pod the revision its template is stamped with (docs/operations.md,
// "Upgrading the proxy safely"). Each entry holds only what a revision names (revisionContent), so an entry
// of the default configuration is about 1.5 KiB and the 50 a history may keep fit many times in
// the API's 1 MiB object limit; entries past HISTORY_MAX_BYTES are dropped oldest first anyway.

import { readConfig, type Config } from './config';
import { frozenSnapshot, type ConfigSnapshot } from '../admission/inject';
import { isRecord } from '../kubernetes/k8s';
import { formatTime, parseTime } from '../kubernetes/time';
import { canonicalJson } from './canonical-json';
import { readEntry } from './history-entry';
import { isSetHistoryKey } from './set-history';
import { contentRevision, revisionContent, type RevisionContent } from './revision';

/** The history ConfigMap's name, beside the configuration's. */
export const historyConfigMapName = (configMapName: string): string => `${configMapName}-history`;

/** Room left under the API server's 1 MiB object limit for metadata and encoding. */
export const HISTORY_MAX_BYTES = 900 * 1024;

export interface HistoryEntry {
  revision: string;
  acceptedAtMs: number;
  content: RevisionContent;
}

/** The size of a string in bytes as the API server counts it (UTF-8). */
const bytesOf = (s: string): number => new TextEncoder().encode(s).length;

export function encodeEntry(entry: HistoryEntry): string {
  return canonicalJson({ acceptedAt: formatTime(entry.acceptedAtMs), content: entry.content });
}

function decodeEntry(revision: string, text: string): HistoryEntry | string {
  return readEntry(revision, text, (value) => decodeValue(revision, value));
}

function decodeValue(revision: string, value: unknown): HistoryEntry | string {
  if (!isRecord(value)) return `entry ${revision} is not a JSON object`;
  const acceptedAtMs = parseTime(typeof value.acceptedAt === 'string' ? value.acceptedAt : '');
  const read = readConfig(isRecord(value.content) ? value.content : undefined);
  if (!read.ok || acceptedAtMs === undefined)
    return `entry ${revision} is not an accepted configuration with an acceptedAt time`;
  const content = revisionContent(read.config);
  // An entry must be what its key says: a hand edit cannot put other content under a revision.
  if (contentRevision(content) !== revision)
    return `entry ${revision} holds the configuration of revision ${contentRevision(content)}`;
  return { revision, acceptedAtMs, content };
}

export interface History {
  /** Newest first. */
  entries: HistoryEntry[];
  /** Entries that could not be read, each named; they are left out. */
  problems: string[];
  /** The keys of those entries: the next write of the history drops them. */
  invalid: string[];
}

export function readHistory(data: Readonly<Record<string, string>> | undefined): History {
  const entries: HistoryEntry[] = [];
  const problems: string[] = [];
  const invalid: string[] = [];
  for (const [revision, text] of Object.entries(data ?? {})) {
    // The sets' entries are read by set-history.ts.
    if (isSetHistoryKey(revision)) continue;
    const entry = decodeEntry(revision, text);
    if (typeof entry === 'string') {
      problems.push(entry);
      invalid.push(revision);
    } else entries.push(entry);
  }
  entries.sort((a, b) => b.acceptedAtMs - a.acceptedAtMs || (a.revision < b.revision ? -1 : 1));
  return { entries, problems, invalid };
}

export interface HistoryUpdate {
  history: readonly HistoryEntry[];
  config: Config;
  revision: string;
  nowMs: number;
  /** How many entries to keep, the current one included. */
  limit: number;
  /** Revisions never dropped (the current one and the last that passed a wave). */
  keep: readonly string[];
  /** Keys of entries that could not be read: dropped with this write. */
  invalid?: readonly string[];
}

/**
 * The merge patch of the history's `data` that records the configuration in force and keeps the
 * history within its bounds, or undefined when nothing needs writing. Drops the oldest entries
 * beyond the limit or the size bound (never the current one or one in `keep`), and the entries
 * that could not be read.
 */
export function historyDataPatch(update: HistoryUpdate): Record<string, string | null> | undefined {
  const recorded = update.history.find((e) => e.revision === update.revision);
  const current: HistoryEntry = recorded ?? {
    revision: update.revision,
    acceptedAtMs: update.nowMs,
    content: revisionContent(update.config),
  };
  const kept = [current, ...update.history.filter((e) => e !== recorded)];
  const patch: Record<string, string | null> = recorded
    ? {}
    : { [update.revision]: encodeEntry(current) };
  for (const key of update.invalid ?? []) if (key !== update.revision) patch[key] = null;
  const size = (entry: HistoryEntry): number =>
    bytesOf(entry.revision) + bytesOf(encodeEntry(entry));
  let bytes = kept.reduce((n, e) => n + size(e), 0);
  let count = kept.length;
  for (const e of [...kept].reverse()) {
    if (count <= update.limit && bytes <= HISTORY_MAX_BYTES) break;
    if (e.revision === update.revision || update.keep.includes(e.revision)) continue;
    patch[e.revision] = null;
    count -= 1;
    bytes -= size(e);
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/**
 * The snapshot a pod pinned to an entry gets: the entry's proxy, init container and sidecar
 * mode, under today's settings otherwise, the overrides policy included: a pin never brings back
 * an override or a registry the admin has since taken away. It keeps the entry's revision.
 */
export function pinnedSnapshot(
  current: ConfigSnapshot,
  content: RevisionContent,
  revision: string = contentRevision(content),
): ConfigSnapshot {
  return frozenSnapshot(
    { ...current.config, ...content, overrides: current.config.overrides },
    revision,
  );
}

/**
 * Which configuration a pod gets (docs/operations.md, "Upgrading the proxy safely"): the revision its
 * template is stamped with while the history holds it; the current one when it is unstamped
 * (bare pods, unstamped owners) or stamped with the current revision; and the current one, as
 * a fallback the caller warns about, when the stamped revision is no longer (or not yet) known.
 */
export type RevisionChoice =
  | { rule: 'current'; snapshot: ConfigSnapshot }
  | { rule: 'pinned'; snapshot: ConfigSnapshot }
  | { rule: 'fallback'; snapshot: ConfigSnapshot; requested: string };

export function chooseRevision(
  requested: string | undefined,
  current: ConfigSnapshot,
  pinned: (revision: string) => ConfigSnapshot | undefined,
): RevisionChoice {
  if (requested === undefined || requested === current.revision)
    return { rule: 'current', snapshot: current };
  const snapshot = pinned(requested);
  if (snapshot) return { rule: 'pinned', snapshot };
  return { rule: 'fallback', snapshot: current, requested };
}
