import { FlagError, helpRequested, namingTheVariable } from '../src';

describe('helpRequested', () => {
  it.each<[string[], boolean]>([
    [['--help'], true],
    [['-h'], true],
    [['--listen', ':8443', '--help'], true],
    [['--listen', ':8443'], false],
    [[], false],
    // after `--` nothing is an option
    [['--', '--help'], false],
    // a value that happens to look like it is not a request
    [['--log-level=--help'], false],
  ])('%j → %s', (argv, expected) => {
    expect(helpRequested(argv)).toBe(expected);
  });
});

describe('namingTheVariable', () => {
  const parse = (argv: string[], env: NodeJS.ProcessEnv) =>
    namingTheVariable(argv, env, () => {
      throw new FlagError('--max-body-bytes must be an integer of at least 1024; got "7MiB"');
    });

  it('names the environment variable a bad value came from', () => {
    expect(() => parse([], { OUTRIGGER_MAX_BODY_BYTES: '7MiB' })).toThrow(
      '--max-body-bytes (set by OUTRIGGER_MAX_BODY_BYTES) must be an integer',
    );
  });

  it('leaves the message alone when the command line gave the value', () => {
    for (const argv of [['--max-body-bytes', '7MiB'], ['--max-body-bytes=7MiB']])
      expect(() => parse(argv, { OUTRIGGER_MAX_BODY_BYTES: '1' })).toThrow(
        /^--max-body-bytes must be/,
      );
  });
});
