// The sidecar sets' part of the revision history (revision-history.ts): one key per revision of
// each set, `<set>.<revision>`, in the same ConfigMap as the proxy's revisions (whose keys have
// no dot). The webhook reads it to give a pod the revision of each set its template is stamped
// with; a set's rollback returns its owners to its last good revision, which is never dropped.
// An entry holds only what a set's revision names (setRevisionContent); its selectors and its
// rollout are the configuration's in force.

import { isRecord } from '../kubernetes/k8s';
import { formatTime, parseTime } from '../kubernetes/time';
import { canonicalJson } from './canonical-json';
import { readEntry } from './history-entry';
import { setRevision } from './revision';
import { readSidecarSet, type SidecarSetConfig } from './sidecar-set';

/** A set's entry key: its name (a DNS label, no dot) and the revision. */
export const setHistoryKey = (set: string, revision: string): string => `${set}.${revision}`;

/** Keys with a dot are the sets'; the proxy's are bare revisions. */
export const isSetHistoryKey = (key: string): boolean => key.includes('.');

/** What a set's revision names: what it adds and where, not which pods it selects. */
export type SetRevisionContent = Omit<
  SidecarSetConfig,
  'namespaceSelector' | 'podSelector' | 'ownerKinds' | 'rollout'
>;

export function setRevisionContent(set: SidecarSetConfig): SetRevisionContent {
  const { name, order, containers, initContainers, volumes, nativeSidecar, position } = set;
  return { name, order, containers, initContainers, volumes, nativeSidecar, position };
}

export interface SetHistoryEntry {
  set: string;
  revision: string;
  acceptedAtMs: number;
  content: SetRevisionContent;
}

const bytesOf = (s: string): number => new TextEncoder().encode(s).length;

export function encodeSetEntry(entry: SetHistoryEntry): string {
  return canonicalJson({ acceptedAt: formatTime(entry.acceptedAtMs), set: entry.content });
}

function decodeSetEntry(key: string, text: string): SetHistoryEntry | string {
  return readEntry(key, text, (value) => decodeSetValue(key, value));
}

function decodeSetValue(key: string, value: unknown): SetHistoryEntry | string {
  const dot = key.indexOf('.');
  const [set, revision] = [key.slice(0, dot), key.slice(dot + 1)];
  if (!isRecord(value)) return `entry ${key} is not a JSON object`;
  const acceptedAtMs = parseTime(typeof value.acceptedAt === 'string' ? value.acceptedAt : '');
  // The set alone: its conflicts are judged against the configuration in force, not here.
  const content = readSidecarSet(isRecord(value.set) ? value.set : {});
  if (!content || acceptedAtMs === undefined)
    return `entry ${key} is not an accepted sidecar set with an acceptedAt time`;
  if (content.name !== set) return `entry ${key} holds set ${content.name}`;
  if (setRevision(content) !== revision)
    return `entry ${key} holds revision ${setRevision(content)} of set ${set}`;
  return { set, revision, acceptedAtMs, content: setRevisionContent(content) };
}

export interface SetHistory {
  /** Newest first. */
  entries: SetHistoryEntry[];
  problems: string[];
  /** Keys of entries that could not be read: the next write drops them. */
  invalid: string[];
}

/** Entries' contents by set and revision, those `keep` accepts (all by default). */
export function heldBySet(
  entries: readonly SetHistoryEntry[],
  keep: (entry: SetHistoryEntry) => boolean = () => true,
): Map<string, Map<string, SetRevisionContent>> {
  const held = new Map<string, Map<string, SetRevisionContent>>();
  for (const e of entries) {
    if (!keep(e)) continue;
    const bySet = held.get(e.set) ?? new Map<string, SetRevisionContent>();
    bySet.set(e.revision, e.content);
    held.set(e.set, bySet);
  }
  return held;
}

export function readSetHistory(data: Readonly<Record<string, string>> | undefined): SetHistory {
  const out: SetHistory = { entries: [], problems: [], invalid: [] };
  for (const [key, text] of Object.entries(data ?? {})) {
    if (!isSetHistoryKey(key)) continue;
    const entry = decodeSetEntry(key, text);
    if (typeof entry === 'string') {
      out.problems.push(entry);
      out.invalid.push(key);
    } else out.entries.push(entry);
  }
  out.entries.sort((a, b) => b.acceptedAtMs - a.acceptedAtMs || (a.revision < b.revision ? -1 : 1));
  return out;
}

export interface SetHistoryUpdate {
  history: readonly SetHistoryEntry[];
  /** The sets in force. */
  sets: readonly SidecarSetConfig[];
  nowMs: number;
  /** How many revisions of each set to keep, the current one included. */
  limit: number;
  /** Keys (setHistoryKey) never dropped: revisions in use, and each set's last good one. */
  keep: ReadonlySet<string>;
  invalid?: readonly string[];
  /** Bytes the proxy's entries leave for the sets' under the object's limit. */
  budgetBytes: number;
}

/** The entries with each set's current revision added (and written into `patch`) where missing. */
function withCurrent(
  update: SetHistoryUpdate,
  current: ReadonlyMap<string, SidecarSetConfig>,
  patch: Record<string, string | null>,
): SetHistoryEntry[] {
  const entries = [...update.history];
  const held = new Set(entries.map((e) => setHistoryKey(e.set, e.revision)));
  for (const [key, set] of current) {
    if (held.has(key)) continue;
    const content = setRevisionContent(set);
    const entry = {
      set: set.name,
      revision: setRevision(set),
      acceptedAtMs: update.nowMs,
      content,
    };
    entries.unshift(entry);
    patch[key] = encodeSetEntry(entry);
  }
  return entries;
}

/**
 * The merge patch of the history's `data` that records each set's current revision and keeps
 * at most `limit` revisions per set (never one in `keep` or a current one), within the bytes
 * left; a set no longer configured keeps only what is still in use.
 */
export function setHistoryDataPatch(update: SetHistoryUpdate): Record<string, string | null> {
  const patch: Record<string, string | null> = {};
  // An entry that cannot be read is dropped, unless it is one kept: the write below rewrites a
  // current one, and a kept one an admin broke is left for the admin to see.
  for (const key of update.invalid ?? []) if (!update.keep.has(key)) patch[key] = null;
  const current = new Map(update.sets.map((s) => [setHistoryKey(s.name, setRevision(s)), s]));
  const entries = withCurrent(update, current, patch);
  const configured = new Set(update.sets.map((s) => s.name));
  const perSet = new Map<string, number>();
  let bytes = 0;
  // Newest first: each set keeps its newest revisions up to the limit.
  for (const e of [...entries].sort((a, b) => b.acceptedAtMs - a.acceptedAtMs)) {
    const key = setHistoryKey(e.set, e.revision);
    const pinned = current.has(key) || update.keep.has(key);
    const count = (perSet.get(e.set) ?? 0) + 1;
    const size = bytesOf(key) + bytesOf(encodeSetEntry(e));
    const fits =
      configured.has(e.set) && count <= update.limit && bytes + size <= update.budgetBytes;
    if (pinned || fits) {
      perSet.set(e.set, count);
      bytes += size;
    } else patch[key] = null;
  }
  return patch;
}
