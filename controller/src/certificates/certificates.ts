// The webhook's certificates in self-managed mode (docs/install.md, "Certificates"; docs/controller.md): a
// CA and a serving certificate signed by it, kept in two Secrets, and the CA bundle in every
// entry of the webhook configuration. Both are renewed well before they expire (a third of
// their life left); a new CA joins the bundle beside the old one, and the serving certificate
// moves to it only after a grace period, so the API server trusts the new certificate before
// the webhook serves it, and no admission fails across a rotation.
//
// planCertificates is pure apart from making keys and signing (no I/O, the clock passed in).

import { generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import type Forge from 'node-forge';
import { certificateValidity, isExpired } from '@outrigger/kube';

export interface CertificatePolicy {
  caValidityMs: number;
  servingValidityMs: number;
  /** How long a new CA is in the bundle before the serving certificate moves to it. */
  caGraceMs: number;
  /** DNS names and IP addresses the serving certificate is for. */
  hosts: string[];
}

export const DEFAULT_CERTIFICATE_POLICY = {
  caValidityMs: 365 * 86_400_000,
  servingValidityMs: 90 * 86_400_000,
  caGraceMs: 2 * 60_000,
} as const;

/** Secret data as the API returns it: base64 values. */
export type SecretData = Record<string, string> | undefined;

export interface CertificateState {
  /** The CA Secret: ca.crt, ca.key, and previous.crt while an old CA is still trusted. */
  ca: SecretData;
  /** The serving Secret: tls.crt, tls.key, ca.crt (the bundle). */
  tls: SecretData;
  /** Each webhook entry's caBundle, by entry name. */
  caBundles: Record<string, string | undefined>;
  /**
   * Since when every entry's caBundle has held the current CA, as the caller has seen it; the
   * serving certificate moves to a new CA only a grace period after that.
   */
  bundleTrustedSinceMs?: number;
  nowMs: number;
}

export interface CertificatePlan {
  /** New data for the CA Secret, when it must change. */
  ca?: Record<string, string>;
  /** New data for the serving Secret, when it must change. */
  tls?: Record<string, string>;
  /** The caBundle every entry should carry (base64 PEM), and the entries that differ. */
  caBundle: string;
  staleEntries: string[];
  /** When to look again: the next renewal or the end of a CA's grace period. */
  recheckAtMs: number;
  /** What changed and why, for the log. */
  why: string[];
}

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64');
const unb64 = (value: string | undefined): string =>
  value === undefined ? '' : Buffer.from(value, 'base64').toString('utf8');

function parse(pem: string): X509Certificate | undefined {
  try {
    return pem.includes('BEGIN CERTIFICATE') ? new X509Certificate(pem) : undefined;
  } catch {
    return undefined;
  }
}

const expired = (cert: X509Certificate, nowMs: number): boolean =>
  isExpired(certificateValidity(cert), nowMs);

/** Renewal is due once less than a third of the certificate's life is left. */
export function renewAt(cert: X509Certificate): number {
  const { notAfterMs, lifetimeMs } = certificateValidity(cert);
  return notAfterMs - lifetimeMs / 3;
}

interface Issued {
  certPem: string;
  keyPem: string;
}

function keyPair(): { publicPem: string; privatePem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { publicPem: publicKey, privatePem: privateKey };
}

/**
 * A certificate serial from 16 random bytes, as the hex forge writes verbatim into the DER
 * INTEGER: the first byte is kept in 0x40..0x7f, so the serial is positive and already in its
 * fewest bytes. A leading zero byte would be "illegal padding" to OpenSSL and a malformed
 * serial to Go, so the API server would refuse the CA bundle.
 */
export function serialNumberHex(random: Uint8Array): string {
  const bytes = Buffer.from(random.subarray(0, 16));
  bytes[0] = ((bytes[0] ?? 0) & 0x3f) | 0x40;
  return bytes.toString('hex');
}

interface SignOptions {
  subject: string;
  nowMs: number;
  validityMs: number;
  extensions: object[];
  signer?: Issued;
}

let forgeLoaded: typeof Forge | undefined;

/**
 * Fails now, with what to do, when the signer cannot be loaded later: an image or install
 * without node-forge would otherwise start fine and fail at its first certificate, perhaps a
 * renewal months on. Finds the module without loading it.
 */
export function assertSignerInstalled(resolve: (id: string) => string = require.resolve): void {
  try {
    resolve('node-forge');
  } catch (err) {
    throw new Error(
      `node-forge, which signs the webhook certificates, cannot be found (${(err as Error).message.split('\n')[0]}); reinstall the controller's dependencies, or run with --webhook-certificates=none and provide the certificates yourself`,
      { cause: err },
    );
  }
}

/**
 * node-forge, loaded when the first certificate is made: most starts make none, and every start
 * loaded its 42 modules before its first list.
 */
function nodeForge(): typeof Forge {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (forgeLoaded ??= require('node-forge') as typeof Forge);
}

function sign(options: SignOptions): Issued {
  const forge = nodeForge();
  const keys = keyPair();
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(keys.publicPem);
  cert.serialNumber = serialNumberHex(randomBytes(16));
  // Backdated a minute, for clocks that are a little behind ours.
  cert.validity.notBefore = new Date(options.nowMs - 60_000);
  cert.validity.notAfter = new Date(options.nowMs + options.validityMs);
  const subject = [{ name: 'commonName', value: options.subject }];
  cert.setSubject(subject);
  const issuer = options.signer
    ? forge.pki.certificateFromPem(options.signer.certPem).subject.attributes
    : subject;
  cert.setIssuer(issuer);
  cert.setExtensions(options.extensions);
  const signingKey = forge.pki.privateKeyFromPem(options.signer?.keyPem ?? keys.privatePem);
  cert.sign(signingKey, forge.md.sha256.create());
  // forge writes CRLF line ends; every other PEM here has LF.
  return {
    certPem: forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n'),
    keyPem: keys.privatePem,
  };
}

export function issueCa(nowMs: number, validityMs: number): Issued {
  return sign({
    subject: 'outrigger-webhook-ca',
    nowMs,
    validityMs,
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
}

const isIp = (host: string): boolean => /^[\d.]+$/.test(host) || host.includes(':');

export function issueServing(
  ca: Issued,
  hosts: string[],
  nowMs: number,
  validityMs: number,
): Issued {
  return sign({
    subject: hosts[0] ?? 'outrigger-webhook',
    nowMs,
    validityMs,
    signer: ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: hosts.map((h) => (isIp(h) ? { type: 7, ip: h } : { type: 2, value: h })),
      },
    ],
  });
}

interface Ca {
  issued: Issued;
  cert: X509Certificate;
}

function readCa(data: SecretData): Ca | undefined {
  const certPem = unb64(data?.['ca.crt']);
  const keyPem = unb64(data?.['ca.key']);
  const cert = parse(certPem);
  return cert && keyPem.includes('PRIVATE KEY') ? { issued: { certPem, keyPem }, cert } : undefined;
}

/** The CA to sign with, and the previous one still trusted during the overlap. */
function chooseCa(state: CertificateState, policy: CertificatePolicy, why: string[]) {
  const current = readCa(state.ca);
  const previous = parse(unb64(state.ca?.['previous.crt']));
  if (current && renewAt(current.cert) > state.nowMs) {
    const keep = previous && !expired(previous, state.nowMs) ? previous : undefined;
    return { current, previous: keep, changed: keep !== previous };
  }
  why.push(current ? 'the CA is due for renewal' : 'no usable CA');
  const issued = issueCa(state.nowMs, policy.caValidityMs);
  const cert = parse(issued.certPem);
  if (!cert) throw new Error('the CA just issued does not parse');
  const old = current && !expired(current.cert, state.nowMs) ? current.cert : undefined;
  return { current: { issued, cert }, previous: old, changed: true };
}

/** Whether the API server has trusted the current CA long enough to be served a certificate of it. */
function caTrusted(
  ca: ReturnType<typeof chooseCa>,
  state: CertificateState,
  policy: CertificatePolicy,
) {
  // A first CA has no predecessor: nothing else could be served.
  if (!ca.previous) return true;
  const since = state.bundleTrustedSinceMs;
  return since !== undefined && since + policy.caGraceMs <= state.nowMs;
}

/** Why the served certificate must be replaced now, or undefined when it may stay. */
function servingProblem(
  tls: SecretData,
  ca: ReturnType<typeof chooseCa>,
  state: CertificateState,
  policy: CertificatePolicy,
): string | undefined {
  const cert = parse(unb64(tls?.['tls.crt']));
  if (!cert || !unb64(tls?.['tls.key']).includes('PRIVATE KEY'))
    return 'no usable serving certificate';
  if (expired(cert, state.nowMs)) return 'the serving certificate has expired';
  if (!policy.hosts.every((h) => (isIp(h) ? cert.checkIP(h) : cert.checkHost(h)) !== undefined))
    return 'the serving certificate does not cover every host';
  const byCurrent = cert.verify(ca.current.cert.publicKey);
  // Until the API server trusts the new CA, the old CA's certificate stays, even when due.
  if (!byCurrent && !caTrusted(ca, state, policy)) return undefined;
  if (!byCurrent) return 'the serving certificate is not signed by the current CA';
  if (renewAt(cert) <= state.nowMs) return 'the serving certificate is due for renewal';
  return undefined;
}

export function planCertificates(
  state: CertificateState,
  policy: CertificatePolicy,
): CertificatePlan {
  const why: string[] = [];
  const ca = chooseCa(state, policy, why);
  const bundlePem = [ca.current.issued.certPem, ...(ca.previous ? [ca.previous.toString()] : [])]
    .map((p) => p.trim())
    .join('\n');
  const caBundle = b64(`${bundlePem}\n`);
  const caData = {
    'ca.crt': b64(ca.current.issued.certPem),
    'ca.key': b64(ca.current.issued.keyPem),
    ...(ca.previous ? { 'previous.crt': b64(ca.previous.toString()) } : {}),
  };
  const problem = servingProblem(state.tls, ca, state, policy);
  let tlsCert = unb64(state.tls?.['tls.crt']);
  let tlsKey = unb64(state.tls?.['tls.key']);
  if (problem) {
    why.push(problem);
    const issued = issueServing(
      ca.current.issued,
      policy.hosts,
      state.nowMs,
      policy.servingValidityMs,
    );
    tlsCert = issued.certPem;
    tlsKey = issued.keyPem;
  }
  const tlsData = { 'tls.crt': b64(tlsCert), 'tls.key': b64(tlsKey), 'ca.crt': caBundle };
  const served = parse(tlsCert);
  const rechecks = [renewAt(ca.current.cert), ...(served ? [renewAt(served)] : [])];
  if (ca.previous) {
    const since = state.bundleTrustedSinceMs;
    // Not yet trusted: look again soon, as the bundle lands; then at the end of the grace.
    rechecks.push(
      certificateValidity(ca.previous).notAfterMs + 1,
      since === undefined ? state.nowMs + 5000 : since + policy.caGraceMs + 1,
    );
  }
  return {
    ...(ca.changed || !sameData(state.ca, caData) ? { ca: caData } : {}),
    ...(!sameData(state.tls, tlsData) ? { tls: tlsData } : {}),
    caBundle,
    staleEntries: Object.entries(state.caBundles)
      .filter(([, bundle]) => bundle !== caBundle)
      .map(([name]) => name),
    recheckAtMs: Math.min(...rechecks.filter((t) => t > state.nowMs)),
    why,
  };
}

function sameData(a: SecretData, b: Record<string, string>): boolean {
  const keys = Object.keys(b);
  return (
    a !== undefined && Object.keys(a).length === keys.length && keys.every((k) => a[k] === b[k])
  );
}
