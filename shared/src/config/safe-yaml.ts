// Reading YAML a user controls without letting it end or stall the process. Turning a document
// into values can throw (an alias to no anchor; more aliases than the parser allows, its guard
// against alias bombs), and the parser's own duplicate-key check compares every key of a map
// with every other: 40,000 keys (700 KB, a ConfigMap holds 1 MiB) took 22 s, with the event
// loop stopped. Here both are answered as problems with the document, and repeated keys are
// found in one pass; flow nesting too deep for the parser is refused before it starts. A
// configuration also refuses tagged values that are not plain data, and aliases that make cycles.

import { isMap, isScalar, visit, type Document } from 'yaml';

/** A problem with a document, and where it is (an offset into the text) when that is known. */
export interface YamlProblem {
  message: string;
  offset?: number;
}

/** The parser's message made into one that says what to change. */
export function yamlMessage(message: string): string {
  const first = (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
  if (/Maximum call stack size exceeded/.test(first))
    return 'nested too deeply to read; flatten the lists and maps';
  const unresolved = /^Unresolved alias \(the anchor must be set before the alias\): (.*)$/.exec(
    first,
  );
  if (unresolved)
    return `the alias *${unresolved[1]} names no anchor; define &${unresolved[1]} before it, or write the value out`;
  if (/Excessive alias count/.test(first))
    return 'too many aliases (a document that expands them could exhaust memory); write the values out';
  return first;
}

/** The first key that a map of the document repeats, in one pass over each map. */
export function repeatedKey(doc: Document): YamlProblem | undefined {
  let found: YamlProblem | undefined;
  visit(doc, {
    Map(_, map) {
      if (!isMap(map)) return undefined;
      const seen = new Set<unknown>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? pair.key.value : String(pair.key);
        if (!seen.has(key)) {
          seen.add(key);
          continue;
        }
        const offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
        found = { message: `Map keys must be unique; "${String(key)}" appears twice`, offset };
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/** The document as plain values, or the problem that kept it from being one. */
export function valueOf(doc: Document): { value: unknown } | { problem: YamlProblem } {
  try {
    return { value: doc.toJS() as unknown };
  } catch (err) {
    return { problem: { message: yamlMessage(err instanceof Error ? err.message : String(err)) } };
  }
}

/**
 * A value of the document that is not plain data: YAML's tags make a Buffer (!!binary), a Set or
 * a Map, which a check for "a mapping" takes for one and JSON turns into something else; and an
 * alias inside its own anchor makes a cycle, which every walk of the value would follow for ever.
 */
export function notPlainData(value: unknown): YamlProblem | undefined {
  const found = notPlain(value, '', new Set());
  if (!found) return undefined;
  const where = found.path || '.';
  return {
    message: found.cycle
      ? `${where} refers to itself through an alias inside its own anchor; write the value out`
      : `${where} is a tagged value (!!binary, !!set, !!omap or another) that Kubernetes cannot take; write plain mappings, lists, strings and numbers`,
  };
}

type Found = { path: string; cycle: boolean } | undefined;

/** The first value under `value` that is not plain data, or that contains itself. */
function notPlain(value: unknown, path: string, within: Set<object>): Found {
  if (value === null || typeof value !== 'object') return undefined;
  if (within.has(value)) return { path, cycle: true };
  const proto = Object.getPrototypeOf(value) as unknown;
  if (!Array.isArray(value) && proto !== Object.prototype && proto !== null)
    return { path, cycle: false };
  within.add(value);
  const entries = Array.isArray(value)
    ? value.map((item, i) => [`${path}[${i}]`, item] as const)
    : Object.entries(value).map(([key, item]) => [`${path}.${key}`, item] as const);
  let found: Found;
  for (const [at, item] of entries) if ((found = notPlain(item, at, within))) break;
  within.delete(value);
  return found;
}

/** Deeper than this, flow collections ([...], {...}) are refused before they are parsed. */
const MAX_FLOW_DEPTH = 64;

/**
 * Whether the text nests flow collections deeper than any configuration needs: the parser
 * recurses once per level, and thousands of them (a few KB of brackets) cost it a second and
 * its stack. Brackets inside quoted scalars and comments are skipped.
 */
export function tooDeep(text: string): YamlProblem | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const skipTo = skipped(text, i);
    if (skipTo !== undefined) i = skipTo;
    else depth += NESTING[text[i] ?? ''] ?? 0;
    if (depth > MAX_FLOW_DEPTH)
      return { message: `nested more than ${MAX_FLOW_DEPTH} deep; flatten the lists and maps` };
  }
  return undefined;
}

const NESTING: Record<string, number> = { '[': 1, '{': 1, ']': -1, '}': -1 };

/** Where a quoted scalar or a comment starting at `i` ends; undefined if none starts there. */
function skipped(text: string, i: number): number | undefined {
  const c = text[i];
  const before = i === 0 ? ' ' : (text[i - 1] ?? ' ');
  if ((c === '"' || c === "'") && /[\s[{,:]/.test(before)) return quoteEnd(text, i);
  if (c === '#' && /\s/.test(before)) return lineEnd(text, i);
  return undefined;
}

/** Where the quoted scalar opening at `from` closes (a backslash escapes in double quotes). */
function quoteEnd(text: string, from: number): number {
  const quote = text[from];
  for (let i = from + 1; i < text.length; i++) {
    if (text[i] === '\\' && quote === '"') i++;
    else if (text[i] === quote) return i;
  }
  return text.length;
}

const lineEnd = (text: string, from: number): number => {
  const end = text.indexOf('\n', from);
  return end === -1 ? text.length : end;
};
