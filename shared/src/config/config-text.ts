// The configuration as text: a YAML document parsed, guarded (safe-yaml.ts) and validated
// (config.ts), with each problem given the line it is on.

import { LineCounter, parseDocument, isNode } from 'yaml';
import { ConfigError, formatIssue, readConfig, type Config, type ConfigResult } from './config';
import { CONFIG_MAP_KEY } from '../names';
import { configRevision } from './revision';
import { notPlainData, repeatedKey, tooDeep, valueOf, yamlMessage } from './safe-yaml';

/**
 * The most a configuration may have. A real one is a few KiB; parsing YAML costs the event loop
 * about 2 ms per KiB, so one of 1 MiB (what a ConfigMap holds) would stop the webhook for seconds.
 */
export const MAX_CONFIG_BYTES = 128 * 1024;

/** Parses and validates a YAML configuration document; an empty document means all defaults. */
export function parseConfig(text: string): ConfigResult {
  // Never a throw: the webhook and the controller read configurations in watch handlers, where
  // a throw restarts the watch, which reads the same version and throws again, unlogged.
  try {
    return parsed(text);
  } catch (err) {
    return refused(
      `could not be read (${err instanceof Error ? err.message : String(err)}); this is a fault in Outrigger: report it with the document, and fix or revert the edit meanwhile`,
    );
  }
}

function parsed(text: string): ConfigResult {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_CONFIG_BYTES)
    return refused(
      `${bytes} bytes; a configuration may have at most ${MAX_CONFIG_BYTES}: keep only the settings that differ from the defaults`,
    );
  const deep = tooDeep(text);
  if (deep) return refused(`not valid YAML: ${deep.message}`);
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false });
  const lineOf = (offset: number | undefined): number | undefined =>
    offset === undefined ? undefined : lineCounter.linePos(offset).line;
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => ({
        path: '.',
        line: lineOf(e.pos[0]),
        message: `not valid YAML: ${yamlMessage(e.message)}`,
      })),
    };
  }
  const read = valueOf(doc);
  const problem = repeatedKey(doc) ?? ('problem' in read ? read.problem : notPlainData(read.value));
  if (problem) return refused(`not valid YAML: ${problem.message}`, lineOf(problem.offset));
  const result = readConfig(('value' in read ? read.value : undefined) ?? {});
  if (result.ok) return result;
  const errors = result.errors.map((e) => {
    const node = doc.getIn(pathOf(e.path), true);
    const line = lineOf(isNode(node) ? node.range?.[0] : undefined);
    return line === undefined ? e : { ...e, line };
  });
  return { ok: false, errors };
}

/** The document refused as a whole, for `message`, at `line` when that is known. */
function refused(message: string, line?: number): ConfigResult {
  return { ok: false, errors: [{ path: '.', message, ...(line === undefined ? {} : { line }) }] };
}

/** Parses, or throws a ConfigError naming every problem. */
export function mustParseConfig(text: string, source?: string): Config {
  const result = parseConfig(text);
  if (!result.ok) throw new ConfigError(result.errors, source);
  return result.config;
}

function pathOf(formatted: string): (string | number)[] {
  const out: (string | number)[] = [];
  for (const m of formatted.matchAll(/\.([^.[\]]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/g)) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else out.push(JSON.parse(m[3] ?? '""') as string);
  }
  return out;
}

/** Why the ConfigMap's current version is not in force; undefined when it is. */
export type ConfigProblem =
  | { reason: 'missing'; message: string }
  | { reason: 'no-key'; message: string }
  | { reason: 'invalid'; message: string; errors: string[] };

export type ConfigReading = { ok: true; config: Config; revision: string } | ConfigProblem;

/**
 * The configuration's text in the ConfigMap, or why there is none: the controller, the CLI and the
 * webhook's ConfigMap source word a missing ConfigMap or key alike, and none of them takes a
 * missing key for the defaults.
 */
export function configMapText(
  cm: { data?: Record<string, string> } | undefined,
  ref: { namespace: string; name: string },
): { text: string } | Exclude<ConfigProblem, { reason: 'invalid' }> {
  const where = `ConfigMap ${ref.namespace}/${ref.name}`;
  if (!cm) return { reason: 'missing', message: `${where} does not exist; create it` };
  const text = cm.data?.[CONFIG_MAP_KEY];
  if (text === undefined)
    return {
      reason: 'no-key',
      message: `${where} has no key ${CONFIG_MAP_KEY}; put the injector configuration there`,
    };
  return { text };
}

/** Reads the configuration from the ConfigMap (pure), as the controller and the CLI do. */
export function readConfigMap(
  cm: { data?: Record<string, string> } | undefined,
  ref: { namespace: string; name: string },
): ConfigReading {
  const found = configMapText(cm, ref);
  if (!('text' in found)) return found;
  const result = parseConfig(found.text);
  if (!result.ok) {
    const errors = result.errors.map(formatIssue);
    return {
      reason: 'invalid',
      message: `ConfigMap ${ref.namespace}/${ref.name} key ${CONFIG_MAP_KEY} is invalid; the last good configuration stays in force: ${errors.join('; ')}`,
      errors,
    };
  }
  return { ok: true, config: result.config, revision: configRevision(result.config) };
}
