// The `outrigger` command: dispatches to the subcommands and turns errors into exit codes.

import { readFile } from 'node:fs/promises';
import { FlagError, apiErrorMessage, httpStatus } from '@outrigger/kube';
import { ConfigError } from '@outrigger/shared';
import { configCommand, CONFIG_USAGE } from './config-command';
import { CHECK_USAGE, checkCommand } from './check-command';
import { FLEET_USAGE, restartCommand, resumeCommand, statusCommand } from './fleet-command';
import { injectCommand, INJECT_USAGE } from './inject-command';
import { ClusterError, InputError, UsageError, type Io } from './io';
import { textOf } from './text-encoding';

const USAGE = `outrigger: the Outrigger sidecar injector's command line

${INJECT_USAGE}

${CONFIG_USAGE}

${FLEET_USAGE}

${CHECK_USAGE}`;

const COMMANDS: Record<string, (args: string[], io: Io) => Promise<number>> = {
  inject: injectCommand,
  config: configCommand,
  check: checkCommand,
  status: statusCommand,
  restart: restartCommand,
  resume: resumeCommand,
};

const HELP = new Set(['help', '--help', '-h']);

export async function run(argv: string[], io: Io): Promise<number> {
  const [command, ...args] = argv;
  try {
    // Asked for, the usage is the answer; without a command, it is an error's explanation.
    if (command !== undefined && HELP.has(command)) {
      io.stdout(`${USAGE}\n`);
      return 0;
    }
    if (command === undefined) {
      io.stderr(`${USAGE}\n`);
      return 2;
    }
    const handler = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
    if (!handler) throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    return await handler(args, io);
  } catch (err) {
    return reportError(err, io);
  }
}

const FILE_CODES = ['ENOENT', 'EISDIR', 'EACCES'];
const NETWORK_CODES = [
  'ECONNREFUSED',
  'ENOTFOUND',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
  'EPROTO',
];
/** The TLS handshake's refusals: a CA we do not trust, a name the certificate is not for... */
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_)/;

/** What the command was given or found that it cannot work with: exit 1, the message alone. */
const INPUT_ERRORS = [ConfigError, ClusterError, InputError];

/** The message and exit code for an error the user can act on; undefined for a bug. */
function describeError(err: unknown): { message: string; exit: number } | undefined {
  // A bad --config-map (kube's parseRef) is bad usage like any other.
  if (err instanceof UsageError || err instanceof FlagError)
    return { message: err.message, exit: 2 };
  const message = (err as Error).message;
  if (INPUT_ERRORS.some((kind) => err instanceof kind)) return { message, exit: 1 };
  // The API server's refusal.
  if (httpStatus(err) !== undefined) return { message: apiErrorMessage(err), exit: 1 };
  const code = (err as NodeJS.ErrnoException).code as unknown;
  // The API server's silence: kube's request timeout.
  if ((err as Error).name === 'TimeoutError')
    return { message: `cannot reach the API server: ${message}`, exit: 1 };
  if (typeof code !== 'string') return undefined;
  if (FILE_CODES.includes(code)) return { message, exit: 1 };
  if (NETWORK_CODES.includes(code) || TLS_CODE.test(code))
    return { message: `cannot reach the API server: ${message}`, exit: 1 };
  // Checked by code, not class: node's own errors come from another realm under test runners.
  if (code.startsWith('ERR_PARSE_ARGS')) return { message, exit: 2 };
  return undefined;
}

function reportError(err: unknown, io: Io): number {
  const described = describeError(err);
  if (!described) throw err;
  io.stderr(`error: ${described.message}\n`);
  return described.exit;
}

/** The file's bytes; an error that names it (Node's EISDIR does not). */
async function readNamed(path: string): Promise<Buffer> {
  try {
    return await readFile(path);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (typeof e.message === 'string' && !e.message.includes(path))
      e.message = `${path}: ${e.message}`;
    throw e;
  }
}

export const processIo: Io = {
  readFile: async (path) => textOf(await readNamed(path), path),
  readStdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return textOf(Buffer.concat(chunks), '<stdin>');
  },
  stdout: (text) => void process.stdout.write(text),
  stderr: (text) => void process.stderr.write(text),
};

export async function main(argv: string[]): Promise<number> {
  return run(argv, processIo);
}
