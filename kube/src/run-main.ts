// How a component's process runs its main(): the exit code becomes the process's, and the
// process ends when main() does, even if something it began (a probe server, a watch still
// waiting at start-up) is open, so it never sits alive and deaf. And the one main() both
// components have: read the command line, start, stop on SIGTERM or SIGINT.

import { FlagError, helpRequested } from './flags';
import type { Logger } from './log';

/** The grace before the process is ended, for its last log lines to reach a piped stdout. */
const EXIT_GRACE_MS = 1000;
/** How long a start that a stop signal aborted may take to end, and be shut down when it does. */
export const ABORTED_START_GRACE_MS = 5000;

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

/** A started component: what a signal stops. */
export interface Stoppable {
  shutdown(): Promise<void>;
}

export interface Component<F, C extends Stoppable> {
  /** The binary's name, in messages. */
  name: string;
  usage: string;
  parse: (argv: string[], env: NodeJS.ProcessEnv) => F;
  logger: (flags: F) => Logger;
  /**
   * Starts the component. `signal` aborts when a stop signal comes during the start: the start
   * should then end soon, by throwing or by resolving (what it started is then shut down). One
   * that is still waiting after ABORTED_START_GRACE_MS (for the API server, say) is left behind,
   * and the process ends.
   */
  start: (flags: F, logger: Logger, signal: AbortSignal) => Promise<C>;
}

/**
 * A component's main(): exit 0 on --help and after a stop signal (during the start or after
 * it, the started component shut down first), 2 on a flag error, 1 when the start failed.
 */
export async function runComponent<F, C extends Stoppable>(
  component: Component<F, C>,
  argv: string[],
): Promise<number> {
  const read = readCommandLine({ ...component, argv });
  if ('exit' in read) return read.exit;
  const logger = component.logger(read.flags);
  const aborted = new AbortController();
  let running: C | undefined;
  const stopped = stopSignalled((signal) => {
    logger.info('signal received', { signal, started: running !== undefined });
    aborted.abort();
    return running?.shutdown();
  });
  const started = component.start(read.flags, logger, aborted.signal).then(
    (c) => (running = c),
    (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
  );
  const first = await Promise.race([started, stopped.then(() => 'stopped' as const)]);
  if (first === 'stopped') {
    await shutDownLate(started);
    return 0;
  }
  if (first instanceof Error) {
    if (aborted.signal.aborted) return 0;
    logger.error(`${component.name} could not start`, { error: first.message });
    return 1;
  }
  // A signal that came while the last step of the start ran found nothing to shut down.
  if (aborted.signal.aborted) await first.shutdown();
  await stopped;
  return 0;
}

/** A start the signal aborted: what it started by the grace's end is shut down. */
async function shutDownLate<C extends Stoppable>(started: Promise<C | Error>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const grace = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ABORTED_START_GRACE_MS);
  });
  const late = await Promise.race([started, grace]);
  clearTimeout(timer);
  if (late !== undefined && !(late instanceof Error)) await late.shutdown();
}
