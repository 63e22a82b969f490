// CEL text from values: what the admission policies are written in. The API server's CEL checks
// that a list's or a map's elements share one type, so every element and map value is given as
// dyn(...): a container's fields are strings, numbers, lists and maps at once.

import { pointer } from '../admission/patch';

/** A CEL string literal: JSON's escapes are CEL's. */
export const celString = (value: string): string => JSON.stringify(value);

/** A list of strings, as CEL. */
export const celStrings = (values: readonly string[]): string =>
  `[${values.map(celString).join(', ')}]`;

/** A JSON value as a CEL literal. */
export function celLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return celString(value);
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`no CEL literal for the number ${value}`);
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.map((v) => `dyn(${celLiteral(v)})`).join(', ')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(
      ([, v]) => v !== undefined,
    );
    return `{${entries.map(([k, v]) => `${celString(k)}: dyn(${celLiteral(v)})`).join(', ')}}`;
  }
  throw new Error(`no CEL literal for a ${typeof value}`);
}

/** A JSON patch operation `add`, as CEL: `path` is a pointer's segments, or CEL text for it. */
export const addOp = (path: readonly string[] | { cel: string }, value: string): string =>
  `JSONPatch{op: "add", path: ${Array.isArray(path) ? celString(pointer(path)) : (path as { cel: string }).cel}, value: ${value}}`;

/** `items` (CEL literals) inserted into the list at `list` from the index `at` (CEL), in order. */
export function insertAt(list: readonly string[], at: string, items: readonly string[]): string {
  const base = celString(pointer(list));
  return `[${items.map((item, i) => addOp({ cel: `${base} + "/" + string(${at} + ${i})` }, item)).join(', ')}]`;
}

/** `ops` (a CEL list) when `condition` holds, else none. */
export const when = (condition: string, ops: string): string => `(${condition} ? ${ops} : [])`;

/** CEL lists joined into one; the empty list when there are none. */
export const concat = (lists: readonly string[]): string =>
  lists.length === 0 ? 'dyn([])' : lists.join(' + ');
