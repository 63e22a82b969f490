// How a component's process runs its main(): the exit code becomes the process's, and the
// process ends when main() does, even if something it began (a probe server, a watch still
// waiting at start-up) is open, so it never sits alive and deaf.

/** The grace before the process is ended, for its last log lines to reach a piped stdout. */
const EXIT_GRACE_MS = 1000;

export function runMain(main: (argv: string[]) => Promise<number>): void {
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
  });
}
