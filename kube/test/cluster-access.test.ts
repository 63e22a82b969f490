// Reading where the API server is and who we are, from a kubeconfig file or a pod's
// environment, without the client library.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inClusterAccess, kubeconfigAccess } from '../src';

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
