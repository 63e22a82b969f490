// Reading YAML a user controls without letting it end or stall the process. Turning a document
// into values can throw (an alias to no anchor; more aliases than the parser allows, its guard
// against alias bombs), and the parser's own duplicate-key check compares every key of a map
// with every other: 40,000 keys (700 KB, a ConfigMap holds 1 MiB) took 22 s, with the event
// loop stopped. Here both are answered as problems with the document, and repeated keys are
// found in one pass. A configuration also refuses tagged values that are not plain data.

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
 * a Map, which a check for "a mapping" takes for one and JSON turns into something else.
 */
export function taggedValue(value: unknown): YamlProblem | undefined {
  const path = notPlain(value, '');
  if (path === undefined) return undefined;
  return {
    message: `${path || '.'} is a tagged value (!!binary, !!set, !!omap or another) that Kubernetes cannot take; write plain mappings, lists, strings and numbers`,
  };
}

/** The path of the first value that is not plain data (a Buffer, Set, Map or Date). */
function notPlain(value: unknown, path: string): string | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = notPlain(item, `${path}[${i}]`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return path;
  for (const [key, item] of Object.entries(value)) {
    const found = notPlain(item, `${path}.${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}
