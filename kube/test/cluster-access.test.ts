// Reading where the API server is and who we are, from kubeconfig files (found and merged as
// kubectl does) or a pod's environment, without the client library.

import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  KubeconfigError,
  inClusterAccess,
  kubeconfigAccess,
  kubectlAccess,
  type KubeconfigProblem,
} from '../src';

const dir = mkdtempSync(join(tmpdir(), 'cluster-access-'));

function kubeconfig(user: Record<string, unknown>, cluster: Record<string, unknown> = {}): string {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}`);
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'here',
    contexts: [
      { name: 'elsewhere', context: { cluster: 'other', user: 'other' } },
      { name: 'here', context: { cluster: 'c', user: 'u' } },
    ],
    clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:6443/', ...cluster } }],
    users: [{ name: 'u', user }],
  };
  writeFileSync(file, JSON.stringify(doc));
  return file;
}

describe('kubeconfigAccess', () => {
  it('reads the current context: inline data, and files relative to the kubeconfig', () => {
    writeFileSync(join(dir, 'ca.crt'), 'CA');
    const access = kubeconfigAccess(
      kubeconfig(
        {
          'client-certificate-data': Buffer.from('CERT').toString('base64'),
          'client-key-data': Buffer.from('KEY').toString('base64'),
        },
        { 'certificate-authority': 'ca.crt' },
      ),
    );
    expect(access.server).toBe('https://127.0.0.1:6443');
    expect(access.ca?.toString()).toBe('CA');
    expect(access.cert?.toString()).toBe('CERT');
    expect(access.key?.toString()).toBe('KEY');
    expect(access.token).toBeUndefined();
    expect(access.insecureSkipTlsVerify).toBe(false);
  });

  it('sends a token, or the current content of a token file', () => {
    expect(kubeconfigAccess(kubeconfig({ token: 'abc' })).token?.()).toBe('abc');
    writeFileSync(join(dir, 'token'), 'from-file\n');
    expect(kubeconfigAccess(kubeconfig({ tokenFile: 'token' })).token?.()).toBe('from-file');
  });

  it('refuses a user that logs in through an exec plugin, saying what to use instead', () => {
    const file = kubeconfig({
      exec: { command: 'aws', apiVersion: 'client.authentication.k8s.io/v1' },
    });
    expect(() => kubeconfigAccess(file)).toThrow(/exec plugin.*client certificate or a token/);
  });

  it('names what the file lacks', () => {
    const file = join(dir, 'broken');
    writeFileSync(file, 'current-context: nowhere\ncontexts: []\n');
    expect(() => kubeconfigAccess(file)).toThrow(/no context named "nowhere"/);
  });
});

describe('inClusterAccess', () => {
  it('says how to run outside a pod', () => {
    expect(() => inClusterAccess({})).toThrow(/not in a cluster.*--kubeconfig/);
  });
});

/** A kubeconfig file of these entries, in its own folder. */
function file(name: string, doc: Record<string, unknown>): string {
  const folder = join(dir, `${name}-${Math.random().toString(36).slice(2)}`);
  mkdirSync(folder);
  const path = join(folder, 'config');
  writeFileSync(path, JSON.stringify({ apiVersion: 'v1', kind: 'Config', ...doc }));
  return path;
}

const cluster = (name: string, server: string, extra: Record<string, unknown> = {}) => ({
  name,
  cluster: { server, ...extra },
});
const context = (name: string, c: string, u: string) => ({
  name,
  context: { cluster: c, user: u },
});
const user = (name: string, token: string) => ({ name, user: { token } });

const problem = (fn: () => unknown): KubeconfigProblem | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof KubeconfigError) return err.problem;
    throw err;
  }
  return undefined;
};

describe('several kubeconfig files, merged as kubectl merges KUBECONFIG', () => {
  const first = file('first', {
    'current-context': 'dev',
    contexts: [context('dev', 'dev', 'me')],
    clusters: [cluster('dev', 'https://dev:6443', { 'certificate-authority': 'ca.crt' })],
    users: [user('me', 'first-token')],
  });
  const second = file('second', {
    'current-context': 'prod',
    contexts: [context('prod', 'prod', 'me'), context('dev', 'prod', 'me')],
    clusters: [cluster('prod', 'https://prod:6443', { 'certificate-authority': 'ca.crt' })],
    users: [user('me', 'second-token')],
  });
  writeFileSync(join(first, '..', 'ca.crt'), 'FIRST CA');
  writeFileSync(join(second, '..', 'ca.crt'), 'SECOND CA');

  it('takes the first current-context and the first entry of each name', () => {
    const access = kubeconfigAccess([first, second]);
    expect(access.server).toBe('https://dev:6443');
    expect(access.token?.()).toBe('first-token');
    expect(access.ca?.toString()).toBe('FIRST CA');
  });

  it('uses the context asked for, with paths relative to the file that names them', () => {
    const access = kubeconfigAccess([first, second], { context: 'prod' });
    expect(access.server).toBe('https://prod:6443');
    expect(access.ca?.toString()).toBe('SECOND CA');
    expect(access.token?.()).toBe('first-token');
  });

  it('says which part is missing, and why, as a KubeconfigError', () => {
    expect(problem(() => kubeconfigAccess([first], { context: 'prod' }))).toBe('no-such-context');
    expect(() => kubeconfigAccess([first, second], { context: 'qa' })).toThrow(
      `kubeconfig ${first}${delimiter}${second}: no context named "qa"`,
    );
    const none = file('none', { contexts: [context('dev', 'dev', 'me')] });
    expect(problem(() => kubeconfigAccess(none))).toBe('no-current-context');
    expect(() => kubeconfigAccess(none)).toThrow(/no current cluster: no current-context is set/);
    const noCluster = file('nocluster', {
      'current-context': 'dev',
      contexts: [context('dev', 'gone', 'me')],
      users: [user('me', 't')],
    });
    expect(problem(() => kubeconfigAccess(noCluster))).toBe('incomplete');
    const exec = file('exec', {
      'current-context': 'dev',
      contexts: [context('dev', 'dev', 'sso')],
      clusters: [cluster('dev', 'https://dev:6443')],
      users: [{ name: 'sso', user: { exec: { command: 'aws' } } }],
    });
    expect(problem(() => kubeconfigAccess(exec))).toBe('unsupported-login');
  });

  it('names a file that cannot be read or parsed', () => {
    const missing = join(dir, 'missing');
    expect(problem(() => kubeconfigAccess(missing))).toBe('unreadable');
    expect(() => kubeconfigAccess(missing)).toThrow(`kubeconfig ${missing}: ENOENT`);
    const garbage = join(dir, 'garbage');
    writeFileSync(garbage, 'this: is: not: yaml: [');
    expect(() => kubeconfigAccess(garbage)).toThrow(new RegExp(`^kubeconfig ${garbage}: \\S`));
  });
});

describe('kubectlAccess', () => {
  const a = file('a', {
    'current-context': 'a',
    contexts: [context('a', 'a', 'u')],
    clusters: [cluster('a', 'https://a:6443')],
    users: [user('u', 'a')],
  });
  const b = file('b', {
    'current-context': 'b',
    contexts: [context('b', 'b', 'u')],
    clusters: [cluster('b', 'https://b:6443')],
    users: [user('u', 'b')],
  });
  const home = join(dir, 'home');
  mkdirSync(join(home, '.kube'), { recursive: true });
  writeFileSync(
    join(home, '.kube', 'config'),
    JSON.stringify({
      'current-context': 'h',
      contexts: [context('h', 'h', 'u')],
      clusters: [cluster('h', 'https://home:6443')],
      users: [user('u', 'h')],
    }),
  );
  const empty = join(dir, 'empty-home');
  mkdirSync(empty, { recursive: true });

  it('reads --kubeconfig, else the files KUBECONFIG lists, else ~/.kube/config', () => {
    const env = { KUBECONFIG: `${b}${delimiter}${a}`, HOME: home };
    expect(kubectlAccess({ kubeconfig: a, env }).server).toBe('https://a:6443');
    expect(kubectlAccess({ env }).server).toBe('https://b:6443');
    expect(kubectlAccess({ env, context: 'a' }).server).toBe('https://a:6443');
    expect(kubectlAccess({ env: { KUBECONFIG: '', HOME: home } }).server).toBe('https://home:6443');
  });

  it('outside a pod without a kubeconfig, says there is none', () => {
    const env = { HOME: empty };
    expect(problem(() => kubectlAccess({ env }))).toBe('not-found');
    expect(() => kubectlAccess({ env })).toThrow(
      'no kubeconfig: KUBECONFIG is not set and ~/.kube/config does not exist, and this is not a pod (KUBERNETES_SERVICE_HOST is not set)',
    );
    expect(problem(() => kubectlAccess({ env, context: 'a' }))).toBe('no-such-context');
  });
});
