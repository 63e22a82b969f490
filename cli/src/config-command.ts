// `outrigger config validate FILE` and `outrigger config default`.

import { DEFAULT_CONFIG_YAML, configRevision, formatIssue, parseConfig } from '@outrigger/shared';
import { UsageError, type Io } from './io';

export const CONFIG_USAGE = `Usage: outrigger config validate FILE   check a configuration; every error is listed by path
       outrigger config default         print the default configuration`;

export async function configCommand(args: string[], io: Io): Promise<number> {
  const [verb, ...rest] = args;
  switch (verb) {
    case 'default':
      io.stdout(DEFAULT_CONFIG_YAML);
      return 0;
    case 'validate': {
      const [file] = rest;
      if (file === undefined || rest.length !== 1)
        throw new UsageError(`config validate takes one FILE\n\n${CONFIG_USAGE}`);
      const text = file === '-' ? await io.readStdin() : await io.readFile(file);
      const result = parseConfig(text);
      if (!result.ok) {
        io.stderr(`${file}: invalid configuration, ${result.errors.length} error(s):\n`);
        for (const e of result.errors) io.stderr(`  ${formatIssue(e)}\n`);
        return 1;
      }
      io.stdout(`${file}: valid (revision ${configRevision(result.config)})\n`);
      return 0;
    }
    case undefined:
    default:
      throw new UsageError(CONFIG_USAGE);
  }
}
