// Throwaway TLS material for servers the API server calls (webhooks): a CA and a serving
// certificate it signed, made with openssl, plus the caBundle that trusts them.

import { execFile } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { logDir } from './log-dir';

const run = promisify(execFile);

export interface ServingCertOptions {
  /** DNS names and IP addresses the certificate is valid for (default 127.0.0.1 and localhost). */
  hosts?: string[];
  /** Subject common name (default: the first host). */
  commonName?: string;
  /** Validity in days (default 2). */
  days?: number;
  /** Where to write the files (default: a new folder under tls/ in the run's log folder). */
  dir?: string;
}

export interface ServingCert {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** PEM texts, ready for https.createServer({ cert, key }) and clients' `ca`. */
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The CA certificate, base64-encoded PEM: a webhook clientConfig's caBundle. */
  caBundle: string;
}

async function openssl(args: string[]): Promise<void> {
  try {
    await run('openssl', args);
  } catch (error) {
    const stderr =
      typeof error === 'object' && error !== null && 'stderr' in error ? String(error.stderr) : '';
    throw new Error(`openssl ${args[0] ?? ''} failed: ${stderr || String(error)}`, {
      cause: error,
    });
  }
}

const ecKey = (file: string): Promise<void> =>
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);

function subjectAltNames(hosts: string[]): string {
  return hosts.map((host) => (isIP(host) ? `IP:${host}` : `DNS:${host}`)).join(',');
}

/** Makes a CA and a serving certificate for `hosts` signed by it. */
export async function makeServingCert(options: ServingCertOptions = {}): Promise<ServingCert> {
  const hosts = options.hosts ?? ['127.0.0.1', 'localhost'];
  const [firstHost] = hosts;
  if (!firstHost) throw new Error('makeServingCert needs at least one host');
  const days = String(options.days ?? 2);
  const dir = options.dir ?? (await mkdtemp(path.join(logDir('tls'), 'cert-')));
  const file = (name: string): string => path.join(dir, name);

  await ecKey(file('ca.key'));
  // prettier-ignore
  await openssl([
    'req', '-x509', '-new', '-key', file('ca.key'), '-sha256', '-days', days,
    '-subj', '/CN=outrigger-e2e-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out', file('ca.crt'),
  ]);
  await ecKey(file('tls.key'));
  await openssl([
    'req',
    '-new',
    '-key',
    file('tls.key'),
    '-subj',
    `/CN=${options.commonName ?? firstHost}`,
    '-out',
    file('tls.csr'),
  ]);
  await writeFile(
    file('tls.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n' +
      `extendedKeyUsage=serverAuth\nsubjectAltName=${subjectAltNames(hosts)}\n`,
  );
  // prettier-ignore
  await openssl([
    'x509', '-req', '-in', file('tls.csr'), '-CA', file('ca.crt'), '-CAkey', file('ca.key'),
    '-CAcreateserial', '-sha256', '-days', days, '-extfile', file('tls.ext'), '-out', file('tls.crt'),
  ]);

  const [caPem, certPem, keyPem] = await Promise.all(
    ['ca.crt', 'tls.crt', 'tls.key'].map((name) => readFile(file(name), 'utf8')),
  );
  if (caPem === undefined || certPem === undefined || keyPem === undefined) {
    throw new Error(`openssl did not write the certificates in ${dir}`);
  }
  return {
    dir,
    caFile: file('ca.crt'),
    certFile: file('tls.crt'),
    keyFile: file('tls.key'),
    caPem,
    certPem,
    keyPem,
    caBundle: Buffer.from(caPem).toString('base64'),
  };
}
