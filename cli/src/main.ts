// The `outrigger` command: dispatches to the subcommands and turns errors into exit codes.

import { readFile } from 'node:fs/promises';
import { ConfigError } from '@outrigger/shared';
import { configCommand, CONFIG_USAGE } from './config-command';
import { injectCommand, INJECT_USAGE } from './inject-command';
import { UsageError, type Io } from './io';

const USAGE = `outrigger: the Outrigger sidecar injector's command line

${INJECT_USAGE}

${CONFIG_USAGE}`;

export async function run(argv: string[], io: Io): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case 'inject':
        return await injectCommand(args, io);
      case 'config':
        return await configCommand(args, io);
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.stdout(`${USAGE}\n`);
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    }
  } catch (err) {
    return reportError(err, io);
  }
}

function reportError(err: unknown, io: Io): number {
  if (err instanceof UsageError) {
    io.stderr(`error: ${err.message}\n`);
    return 2;
  }
  if (err instanceof ConfigError) {
    io.stderr(`error: ${err.message}\n`);
    return 1;
  }
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 1;
  }
  // Checked by code, not class: node's own errors come from another realm under test runners.
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }
  throw err;
}

export const processIo: Io = {
  readFile: (path) => readFile(path, 'utf8'),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

export async function main(argv: string[]): Promise<number> {
  return run(argv, processIo);
}
