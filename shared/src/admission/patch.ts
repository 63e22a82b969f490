// RFC 6902 patches that only add. Objects and lists the target lacks are created whole;
// existing ones get single entries, so nothing the user wrote is ever replaced or removed.

export interface AddOperation {
  op: 'add';
  path: string;
  value: unknown;
}

/** Escaped tokens that needed it: the same few keys (ours) come in nearly every patch. */
const escaped = new Map<string, string>();
const MAX_ESCAPED = 1024;

/** RFC 6901: `~` becomes `~0` and `/` becomes `~1` in a reference token. */
export function escapeToken(token: string): string {
  if (!token.includes('~') && !token.includes('/')) return token;
  let known = escaped.get(token);
  if (known === undefined) {
    known = token.replace(/~/g, '~0').replace(/\//g, '~1');
    if (escaped.size >= MAX_ESCAPED) escaped.clear();
    escaped.set(token, known);
  }
  return known;
}

export function pointer(segments: readonly (string | number)[]): string {
  let path = '';
  for (const s of segments) path += `/${escapeToken(String(s))}`;
  return path;
}

/** `pointer([...parent, token])`, without the list. */
const child = (parent: readonly string[], token: string | number): string =>
  `${pointer(parent)}/${escapeToken(String(token))}`;

/** Adds `entries` to the map at `path`; creates the map whole when it is missing. */
export function addToMap(
  path: readonly string[],
  existing: Record<string, unknown> | undefined,
  entries: Record<string, unknown>,
): AddOperation[] {
  if (Object.keys(entries).length === 0) return [];
  if (existing === undefined || existing === null)
    return [{ op: 'add', path: pointer(path), value: entries }];
  return Object.entries(entries).map(([k, v]) => ({ op: 'add', path: child(path, k), value: v }));
}

/** Inserts `items` into the list at `path`, at the front or the back; creates the list if missing. */
export function addToList(
  path: readonly string[],
  existing: readonly unknown[] | undefined,
  items: readonly unknown[],
  where: 'front' | 'back',
): AddOperation[] {
  if (items.length === 0) return [];
  if (existing === undefined || existing === null)
    return [{ op: 'add', path: pointer(path), value: [...items] }];
  if (where === 'front')
    return items.map((value, i) => ({ op: 'add', path: child(path, i), value }));
  return items.map((value) => ({ op: 'add', path: `${pointer(path)}/-`, value }));
}

/**
 * Inserts `front` at the front of the list at `path` and appends `back`, in one pass; creates
 * the list whole, front then back, when it is missing.
 */
export function addToListEnds(
  path: readonly string[],
  existing: readonly unknown[] | undefined,
  front: readonly unknown[],
  back: readonly unknown[],
): AddOperation[] {
  if (existing === undefined || existing === null)
    return front.length + back.length === 0
      ? []
      : [{ op: 'add', path: pointer(path), value: [...front, ...back] }];
  return [...addToList(path, existing, front, 'front'), ...addToList(path, existing, back, 'back')];
}

/** JSON computed once for frozen values that many patches share (the sidecar containers). */
const fragments = new WeakMap<object, string>();

/** Remembers the JSON of a frozen value, so serializePatch can splice it in. */
export function registerFragment<T extends object>(value: T): T {
  if (!Object.isFrozen(value))
    throw new Error('only frozen values can be registered: their JSON must not go stale');
  fragments.set(value, JSON.stringify(value));
  return value;
}

function toJson(value: unknown): string {
  if (typeof value === 'object' && value !== null) {
    const known = fragments.get(value);
    if (known !== undefined) return known;
    if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  }
  return JSON.stringify(value);
}

/**
 * The patch as JSON, the same text JSON.stringify gives, but splicing in the JSON of shared
 * parts computed once: the sidecar containers are most of every patch.
 */
export function serializePatch(ops: readonly AddOperation[]): string {
  return `[${ops.map((o) => `{"op":"add","path":${JSON.stringify(o.path)},"value":${toJson(o.value)}}`).join(',')}]`;
}
