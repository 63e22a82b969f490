import { helpRequested } from '../src';

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
