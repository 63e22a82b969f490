// Throwaway TLS material for a test's servers: a CA and a serving certificate it signed, made
// with openssl, plus the caBundle a webhook configuration trusts them by.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export interface ServingCertOptions {
  /** DNS names and IP addresses the certificate is valid for (default 127.0.0.1 and localhost). */
  hosts?: string[];
  /** Subject common name (default: the first host). */
  commonName?: string;
  /** Validity in days (default 2). */
  days?: number;
  /** Where to write the files (default: a new folder under the system's temporary folder). */
  dir?: string;
  /** The files' base name: <name>.crt, <name>.key, <name>-ca.crt (default tls). */
  name?: string;
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

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (error) {
    const stderr =
      typeof error === 'object' && error !== null && 'stderr' in error ? String(error.stderr) : '';
    throw new Error(`openssl ${args[0] ?? ''} failed: ${stderr || String(error)}`, {
      cause: error,
    });
  }
}

const ecKey = (file: string): void =>
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', file]);

const subjectAltNames = (hosts: string[]): string =>
  hosts.map((host) => (isIP(host) ? `IP:${host}` : `DNS:${host}`)).join(',');

/** Makes a CA and a serving certificate for `hosts` signed by it (EC P-256, SHA-256). */
export function makeServingCert(options: ServingCertOptions = {}): ServingCert {
  const hosts = options.hosts ?? ['127.0.0.1', 'localhost'];
  const [firstHost] = hosts;
  if (!firstHost) throw new Error('makeServingCert needs at least one host');
  const days = String(options.days ?? 2);
  const dir = options.dir ?? mkdtempSync(path.join(tmpdir(), 'outrigger-cert-'));
  const name = options.name ?? 'tls';
  const file = (suffix: string): string => path.join(dir, `${name}${suffix}`);

  ecKey(file('-ca.key'));
  // prettier-ignore
  openssl([
    'req', '-x509', '-new', '-key', file('-ca.key'), '-sha256', '-days', days,
    '-subj', `/CN=outrigger-test-ca-${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
    '-out', file('-ca.crt'),
  ]);
  ecKey(file('.key'));
  openssl([
    'req',
    '-new',
    '-key',
    file('.key'),
    '-subj',
    `/CN=${options.commonName ?? firstHost}`,
    '-out',
    file('.csr'),
  ]);
  writeFileSync(
    file('.ext'),
    'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n' +
      `extendedKeyUsage=serverAuth\nsubjectAltName=${subjectAltNames(hosts)}\n`,
  );
  // prettier-ignore
  openssl([
    'x509', '-req', '-in', file('.csr'), '-CA', file('-ca.crt'), '-CAkey', file('-ca.key'),
    '-CAcreateserial', '-sha256', '-days', days, '-extfile', file('.ext'), '-out', file('.crt'),
  ]);

  const caPem = readFileSync(file('-ca.crt'), 'utf8');
  return {
    dir,
    caFile: file('-ca.crt'),
    certFile: file('.crt'),
    keyFile: file('.key'),
    caPem,
    certPem: readFileSync(file('.crt'), 'utf8'),
    keyPem: readFileSync(file('.key'), 'utf8'),
    caBundle: Buffer.from(caPem).toString('base64'),
  };
}
