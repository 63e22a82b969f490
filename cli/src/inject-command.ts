// `outrigger inject -f FILE...`: manual injection of manifests, like `istioctl kube-inject`.

import { parseArgs } from 'node:util';
import {
  ManifestParseError,
  formatReportLine,
  injectManifest,
  type ManifestOptions,
} from '@outrigger/shared';
import { loadSnapshot } from './config-file';
import { UsageError, type Io } from './io';

export const INJECT_USAGE = `Usage: outrigger inject -f FILE [-f FILE...] [--config FILE] [--native-sidecars supported|unsupported]

Injects the proxy into every Pod and every workload's pod template in FILE (- for stdin)
and writes the result to stdout; one line per object on stderr says what was done.`;

export async function injectCommand(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      filename: { type: 'string', short: 'f', multiple: true },
      config: { type: 'string' },
      'native-sidecars': { type: 'string', default: 'supported' },
    },
    strict: true,
  });
  const files = values.filename ?? [];
  if (files.length === 0)
    throw new UsageError(`inject needs at least one -f FILE\n\n${INJECT_USAGE}`);
  const support = values['native-sidecars'];
  if (support !== 'supported' && support !== 'unsupported')
    throw new UsageError(`--native-sidecars must be supported or unsupported; got ${support}`);
  const options = {
    snapshot: await loadSnapshot(io, values.config),
    nativeSidecarSupported: support === 'supported',
  };
  const outputs: string[] = [];
  for (const file of files) {
    const output = await injectFile(file, options, io);
    if (output === undefined) return 1;
    if (output !== '') outputs.push(output);
  }
  // Nothing reaches stdout unless every file parsed: a half-written stream is worse than none.
  io.stdout(outputs.join('---\n'));
  return 0;
}

/** Injects one file and reports on stderr; undefined when it does not parse. */
async function injectFile(
  file: string,
  options: ManifestOptions,
  io: Io,
): Promise<string | undefined> {
  const text = file === '-' ? await io.readStdin() : await io.readFile(file);
  try {
    const result = injectManifest(text, options);
    for (const line of result.report) {
      io.stderr(`${formatReportLine(line)}\n`);
      if (line.outcome === 'skipped') io.stderr(`  ${line.detail}\n`);
      for (const w of line.warnings) io.stderr(`  warning: ${w}\n`);
    }
    return result.output;
  } catch (err) {
    if (!(err instanceof ManifestParseError)) throw err;
    io.stderr(`error: ${file === '-' ? '<stdin>' : file}: ${err.message}\n`);
    return undefined;
  }
}
