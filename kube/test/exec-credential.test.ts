// A kubeconfig user's exec plugin, run for the CLI as kubectl runs it (a stand-in plugin here,
// a script that prints an ExecCredential): its token is used until it expires, then the plugin
// runs again; a plugin that fails is named, with its install hint. The components refuse it.

import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeconfigError, kubeconfigAccess, kubectlAccess } from '../src';

const dir = mkdtempSync(join(tmpdir(), 'exec-credential-'));
const runs = join(dir, 'runs');

/** A plugin that counts its runs and prints a token made of its env, expiring at `expires`. */
const plugin = join(dir, 'plugin.js');
writeFileSync(
  plugin,
  `const fs = require('node:fs');
fs.appendFileSync(${JSON.stringify(runs)}, 'x');
const info = JSON.parse(process.env.KUBERNETES_EXEC_INFO);
if (process.env.FAIL) { console.error('no SSO session'); process.exit(3); }
console.log(JSON.stringify({
  apiVersion: info.apiVersion,
  kind: 'ExecCredential',
  status: { token: process.env.REGION + '-' + info.kind, expirationTimestamp: process.env.EXPIRES },
}));
`,
);

function kubeconfig(exec: Record<string, unknown>): string {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}`);
  writeFileSync(
    file,
    JSON.stringify({
      'current-context': 'eks',
      contexts: [{ name: 'eks', context: { cluster: 'eks', user: 'sso' } }],
      clusters: [{ name: 'eks', cluster: { server: 'https://eks.example:443' } }],
      users: [
        { name: 'sso', user: { exec: { apiVersion: 'client.authentication.k8s.io/v1', ...exec } } },
      ],
    }),
  );
  return file;
}

const node = (env: Record<string, string>, extra: Record<string, unknown> = {}) =>
  kubeconfig({
    command: process.execPath,
    args: [plugin],
    env: Object.entries(env).map(([name, value]) => ({ name, value })),
    ...extra,
  });

const runCount = (): number => {
  try {
    return readFileSync(runs, 'utf8').length;
  } catch {
    return 0;
  }
};

describe('an exec plugin', () => {
  beforeEach(() => writeFileSync(runs, ''));

  it('gives the CLI its token, with the user env and KUBERNETES_EXEC_INFO', () => {
    const access = kubectlAccess({
      kubeconfig: node({ REGION: 'eu', EXPIRES: '2999-01-01T00:00:00Z' }),
    });
    expect(access.server).toBe('https://eks.example:443');
    expect(access.token?.()).toBe('eu-ExecCredential');
    expect(access.token?.()).toBe('eu-ExecCredential');
    expect(runCount()).toBe(1);
  });

  it('runs again once the token has expired', () => {
    const access = kubectlAccess({
      kubeconfig: node({ REGION: 'us', EXPIRES: '2000-01-01T00:00:00Z' }),
    });
    expect(runCount()).toBe(1);
    expect(access.token?.()).toBe('us-ExecCredential');
    expect(access.token?.()).toBe('us-ExecCredential');
    expect(runCount()).toBe(3);
  });

  it('that fails is named, with its install hint', () => {
    const file = node({ FAIL: '1' }, { installHint: 'run aws sso login first' });
    let thrown: unknown;
    try {
      kubectlAccess({ kubeconfig: file });
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(KubeconfigError);
    expect((thrown as KubeconfigError).problem).toBe('login-failed');
    expect((thrown as Error).message).toMatch(
      new RegExp(
        `^kubeconfig ${file}: user "sso": exec plugin .* failed: .*; run aws sso login first$`,
      ),
    );
  });

  it('found relative to the kubeconfig, when its command is a relative path', () => {
    const script = join(dir, 'get-token');
    writeFileSync(script, '#!/bin/sh\necho \'{"status":{"token":"from-script"}}\'\n');
    chmodSync(script, 0o755);
    expect(kubectlAccess({ kubeconfig: kubeconfig({ command: './get-token' }) }).token?.()).toBe(
      'from-script',
    );
  });

  it('is refused, and never run, where plugins are not run (the components)', () => {
    expect(() => kubeconfigAccess(node({ REGION: 'eu' }))).toThrow(/logs in with an exec plugin/);
    expect(runCount()).toBe(0);
  });
});
