// Flags: defaults, environment variables, --leader-elect forms, and errors that name the fix.

import { FlagError, parseFlags } from '../src/flags';

describe('parseFlags', () => {
  it('has the documented defaults', () => {
    expect(parseFlags([])).toEqual({
      namespace: 'outrigger-system',
      configMap: { namespace: 'outrigger-system', name: 'outrigger-config' },
      metricsListen: { host: '', port: 9091 },
      leaderElect: true,
      leaseName: 'outrigger-controller',
      logLevel: 'info',
    });
  });

  it('defaults the ConfigMap to the given namespace', () => {
    const flags = parseFlags(['--namespace', 'mesh']);
    expect(flags.configMap).toEqual({ namespace: 'mesh', name: 'outrigger-config' });
  });

  it('reads environment variables, and flags win over them', () => {
    const env = { OUTRIGGER_NAMESPACE: 'from-env', OUTRIGGER_LEADER_ELECT: 'false' };
    expect(parseFlags([], env)).toMatchObject({ namespace: 'from-env', leaderElect: false });
    expect(parseFlags(['--namespace', 'flag'], env).namespace).toBe('flag');
  });

  it.each([
    [['--leader-elect'], true],
    [['--leader-elect=true'], true],
    [['--leader-elect=false'], false],
  ])('%j gives leaderElect %s', (argv, want) => {
    expect(parseFlags(argv).leaderElect).toBe(want);
  });

  it('takes every flag', () => {
    // prettier-ignore
    const flags = parseFlags([
      '--kubeconfig', '/k', '--config-map', 'a/b', '--metrics-listen', '127.0.0.1:1',
      '--lease-name', 'l', '--log-level', 'debug',
    ]);
    expect(flags).toMatchObject({
      kubeconfig: '/k',
      configMap: { namespace: 'a', name: 'b' },
      metricsListen: { host: '127.0.0.1', port: 1 },
      leaseName: 'l',
      logLevel: 'debug',
    });
  });

  it.each([
    [['--leader-elect=maybe'], /--leader-elect must be true or false/],
    // As with Go's boolean flags, the value must be attached: a separate word is positional.
    [['--leader-elect', 'false'], /Usage/],
    [['--config-map', 'nameonly'], /--config-map must be NAMESPACE\/NAME/],
    [['--metrics-listen', '9091'], /--metrics-listen must be HOST:PORT/],
    [['--log-level', 'loud'], /--log-level must be one of/],
    [['--namespace', 'Bad_Name'], /--namespace must be a namespace name/],
    [['--unknown', 'x'], /Usage/],
  ])('%j is refused with a message naming the flag', (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(FlagError);
    expect(() => parseFlags(argv)).toThrow(message);
  });
});
