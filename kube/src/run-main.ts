// How a component's process runs its main(): the exit code becomes the process's, and the
// process ends when main() does, even if something it began (a probe server, a watch still
// waiting at start-up) is open, so it never sits alive and deaf. Also the two things every main()
// does the same way: reading its command line, and stopping on SIGTERM or SIGINT.

import { FlagError, helpRequested } from './flags';

/** The grace before the process is ended, for its last log lines to reach a piped stdout. */
const EXIT_GRACE_MS = 1000;

export function runMain(main: (argv: string[]) => Promise<number>): void {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  });
}

/**
 * A component's command line: `--help` (or `-h`) prints the usage on stdout and means exit 0; a
 * flag error prints the error, and the usage unless the error already holds it, on stderr and
 * means exit 2. Gives the flags, or the exit code to return.
 */
export function readCommandLine<F>(command: {
  name: string;
  usage: string;
  argv: string[];
  parse: (argv: string[], env: NodeJS.ProcessEnv) => F;
}): { flags: F } | { exit: number } {
  if (helpRequested(command.argv)) {
    process.stdout.write(`${command.usage}\n`);
    return { exit: 0 };
  }
  try {
    return { flags: command.parse(command.argv, process.env) };
  } catch (err) {
    if (!(err instanceof FlagError)) throw err;
    const usage = err.message.includes('Usage') ? '' : `\n${command.usage}\n`;
    process.stderr.write(`${command.name}: ${err.message}\n${usage}`);
    return { exit: 2 };
  }
}

/**
 * Resolves once the process has stopped as it was told: on the first SIGTERM or SIGINT,
 * `onSignal` runs once with the signal's name, and what it returns (a shutdown) is waited for.
 */
export function stopSignalled(
  onSignal: (signal: string) => Promise<void> | undefined | void,
): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false;
    const handle = (signal: string) => () => {
      if (stopping) return;
      stopping = true;
      void Promise.resolve(onSignal(signal)).then(() => resolve());
    };
    process.once('SIGTERM', handle('SIGTERM'));
    process.once('SIGINT', handle('SIGINT'));
  });
}
