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
      writeQps: 20,
      writeBurst: 50,
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
      '--lease-name', 'l', '--log-level', 'debug', '--write-qps', '2.5', '--write-burst', '7',
      '--webhook-ready-url', 'http://w:9090/readyz',
    ]);
    expect(flags).toMatchObject({
      kubeconfig: '/k',
      configMap: { namespace: 'a', name: 'b' },
      metricsListen: { host: '127.0.0.1', port: 1 },
      leaseName: 'l',
      logLevel: 'debug',
      writeQps: 2.5,
      writeBurst: 7,
      webhookReadyUrl: 'http://w:9090/readyz',
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
    [['--write-qps', '0'], /--write-qps must be a number from 1 to 10000, such as --write-qps=20/],
    [['--write-burst', '1.5'], /--write-burst must be a whole number/],
    [['--webhook-ready-url', 'w:9090'], /--webhook-ready-url must be an http\(s\) URL/],
    // Renewed with a third of its 100 s left, the old CA expired 20 s into the 120 s grace,
    // with the serving certificate still signed by it: every admission failed until the move.
    [
      ['--webhook-certificates', 'self-managed', '--ca-validity-seconds', '100'],
      /--ca-validity-seconds \(100\) must be at least 4 times --ca-grace-seconds \(120\)/,
    ],
  ])('%j is refused with a message naming the flag', (argv, message) => {
    expect(() => parseFlags(argv)).toThrow(FlagError);
    expect(() => parseFlags(argv)).toThrow(message);
  });

  it('keeps no policies in the webhook mode, and reads the policy settings in the others', () => {
    expect(parseFlags(['--admission-mode', 'webhook']).policies).toBeUndefined();
    expect(parseFlags(['--admission-mode', 'both']).policies).toEqual({
      mode: 'both',
      apiVersion: 'admissionregistration.k8s.io/v1beta1',
      failurePolicy: 'Fail',
      ownerClusterRole: 'outrigger-controller',
    });
    expect(
      parseFlags([
        '--admission-mode=policy',
        '--policy-api-version=admissionregistration.k8s.io/v1',
        '--policy-failure-policy=Ignore',
      ]).policies,
    ).toEqual({
      mode: 'policy',
      apiVersion: 'admissionregistration.k8s.io/v1',
      failurePolicy: 'Ignore',
      ownerClusterRole: 'outrigger-controller',
    });
    expect(() => parseFlags(['--admission-mode=policies'])).toThrow(
      /--admission-mode must be one of webhook, policy, both/,
    );
    expect(() => parseFlags(['--admission-mode=policy', '--policy-api-version=v1'])).toThrow(
      /--policy-api-version must be one of/,
    );
  });
});
