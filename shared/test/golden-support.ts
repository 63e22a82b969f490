// Renders an input manifest to its golden form: the report as comments, then the injected
// YAML, or the parse error. Shared by the golden test and by anything that regenerates them.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  DEFAULT_CONFIG_YAML,
  ManifestParseError,
  formatReportLine,
  injectManifest,
  makeSnapshot,
  mustParseConfig,
  type ConfigSnapshot,
} from '../src';

export function snapshotOf(text: string): ConfigSnapshot {
  const config = mustParseConfig(text);
  return makeSnapshot(config);
}

export const DEFAULT_SNAPSHOT = snapshotOf(DEFAULT_CONFIG_YAML);

/** Directives in an input's leading comments: `# config: FILE`, `# native-sidecars: unsupported`. */
function directives(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^# (config|native-sidecars): (\S+)\s*$/.exec(line);
    if (m?.[1] && m[2]) out[m[1]] = m[2];
  }
  return out;
}

export function renderGolden(inputPath: string): string {
  const text = readFileSync(inputPath, 'utf8');
  const d = directives(text);
  const snapshot = d.config
    ? snapshotOf(readFileSync(join(dirname(inputPath), d.config), 'utf8'))
    : DEFAULT_SNAPSHOT;
  try {
    const result = injectManifest(text, {
      snapshot,
      nativeSidecarSupported: d['native-sidecars'] !== 'unsupported',
    });
    const head = result.report.flatMap((line) => [
      `# ${formatReportLine(line)}`,
      ...(line.outcome === 'skipped' ? [`#   ${line.detail}`] : []),
      ...line.warnings.map((w) => `#   warning: ${w}`),
    ]);
    return `${head.join('\n')}\n${result.output}`;
  } catch (err) {
    if (err instanceof ManifestParseError) return `# error: ${err.message}\n`;
    throw err;
  }
}
