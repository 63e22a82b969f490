// Self-managed certificates: issue, keep steady, renew the serving certificate, rotate the CA
// with an overlap in the bundle, and move the serving certificate to the new CA only after
// the grace period.

import { X509Certificate } from 'node:crypto';
import {
  assertSignerInstalled,
  issueCa,
  planCertificates,
  serialNumberHex,
  type CertificatePlan,
  type CertificatePolicy,
  type CertificateState,
} from '../src/certificates/certificates';

const DAY = 86_400_000;
const T0 = Date.parse('2026-11-30T00:00:00Z');
const policy: CertificatePolicy = {
  caValidityMs: 300 * DAY,
  servingValidityMs: 90 * DAY,
  caGraceMs: 2 * 60_000,
  hosts: ['outrigger-webhook.outrigger-system.svc', '127.0.0.1'],
};

const pem = (b64: string | undefined) => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const cert = (b64: string | undefined) => new X509Certificate(pem(b64));
const bundleCerts = (b64: string) =>
  pem(b64)
    .split(/(?=-----BEGIN CERTIFICATE-----)/)
    .filter((p) => p.includes('BEGIN'))
    .map((p) => new X509Certificate(p));

/** The cluster after a plan is carried out. */
function apply(state: CertificateState, plan: CertificatePlan, nowMs: number): CertificateState {
  return {
    ca: plan.ca ?? state.ca,
    tls: plan.tls ?? state.tls,
    caBundles: Object.fromEntries(Object.keys(state.caBundles).map((k) => [k, plan.caBundle])),
    nowMs,
  };
}

const empty: CertificateState = {
  ca: undefined,
  tls: undefined,
  caBundles: { 'pods.outrigger.dev': undefined, 'workloads.outrigger.dev': 'c3RhbGU=' },
  nowMs: T0,
};

describe('planCertificates', () => {
  const first = planCertificates(empty, policy);
  const issued = apply(empty, first, T0);

  it('issues a CA and a serving certificate it signs, for every host, and the bundle', () => {
    const ca = cert(first.ca?.['ca.crt']);
    const serving = cert(first.tls?.['tls.crt']);
    expect(ca.ca).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    expect(serving.checkHost('outrigger-webhook.outrigger-system.svc')).toBeDefined();
    expect(serving.checkIP('127.0.0.1')).toBeDefined();
    expect(first.tls?.['ca.crt']).toBe(first.caBundle);
    expect(bundleCerts(first.caBundle).map((c) => c.fingerprint256)).toEqual([ca.fingerprint256]);
    expect(first.staleEntries.sort()).toEqual(['pods.outrigger.dev', 'workloads.outrigger.dev']);
  });

  it('changes nothing once carried out: a steady cluster gets no writes', () => {
    const again = planCertificates({ ...issued, nowMs: T0 + DAY }, policy);
    expect(again).toMatchObject({ staleEntries: [], why: [] });
    expect(again.ca).toBeUndefined();
    expect(again.tls).toBeUndefined();
    expect(again.recheckAtMs).toBeGreaterThan(T0 + 59 * DAY);
  });

  it('puts back a caBundle someone changed', () => {
    const tampered = {
      ...issued,
      caBundles: { ...issued.caBundles, 'pods.outrigger.dev': 'eA==' },
    };
    expect(planCertificates(tampered, policy).staleEntries).toEqual(['pods.outrigger.dev']);
  });

  it('renews the serving certificate with a third of its life left, from the same CA', () => {
    const later = T0 + 61 * DAY;
    const plan = planCertificates({ ...issued, nowMs: later }, policy);
    expect(plan.ca).toBeUndefined();
    expect(plan.why).toEqual(['the serving certificate is due for renewal']);
    const renewed = cert(plan.tls?.['tls.crt']);
    expect(renewed.verify(cert(first.ca?.['ca.crt']).publicKey)).toBe(true);
    expect(new Date(renewed.validTo).getTime()).toBeGreaterThan(later + 89 * DAY);
  });

  it('rotates the CA with both in the bundle, and moves the serving certificate after the grace', () => {
    let state: CertificateState = { ...issued, nowMs: T0 + 201 * DAY };
    // The serving certificate was renewed meanwhile, and is not due again yet.
    const renewed = planCertificates({ ...issued, nowMs: T0 + 180 * DAY }, policy);
    state = apply(state, renewed, T0 + 201 * DAY);
    const rotation = planCertificates(state, policy);
    expect(rotation.why).toContain('the CA is due for renewal');
    const [newCa, oldCa] = bundleCerts(rotation.caBundle);
    expect(oldCa?.fingerprint256).toBe(cert(first.ca?.['ca.crt']).fingerprint256);
    expect(newCa?.fingerprint256).not.toBe(oldCa?.fingerprint256);
    // Still the old CA's serving certificate: the API server must trust the new CA first.
    expect(pem(rotation.tls?.['tls.crt'])).toBe(pem(renewed.tls?.['tls.crt']));
    expect(rotation.tls?.['ca.crt']).toBe(rotation.caBundle);

    const rotated = apply(state, rotation, state.nowMs);
    // The bundle has not been seen in every entry yet: the old certificate stays, however long.
    const unseen = planCertificates({ ...rotated, nowMs: state.nowMs + 5 * 60_000 }, policy);
    expect(unseen.tls).toBeUndefined();
    // Seen since the rotation, but the grace period has not passed.
    const early = planCertificates(
      { ...rotated, bundleTrustedSinceMs: state.nowMs + 60_000, nowMs: state.nowMs + 90_000 },
      policy,
    );
    expect(early.tls).toBeUndefined();
    const afterGrace = planCertificates(
      { ...rotated, bundleTrustedSinceMs: state.nowMs + 60_000, nowMs: state.nowMs + 5 * 60_000 },
      policy,
    );
    expect(afterGrace.why).toEqual(['the serving certificate is not signed by the current CA']);
    expect(cert(afterGrace.tls?.['tls.crt']).verify(newCa?.publicKey as never)).toBe(true);
    expect(afterGrace.caBundle).toBe(rotation.caBundle);
  });

  it('keeps a due serving certificate of the old CA when both renew at once, until the new CA is trusted', () => {
    // Both at 90 days: at day 61 both are due in the same step.
    const same = { ...policy, caValidityMs: 90 * DAY };
    const start = planCertificates(empty, same);
    const both = planCertificates({ ...apply(empty, start, T0), nowMs: T0 + 61 * DAY }, same);
    expect(both.why).toEqual(['the CA is due for renewal']);
    expect(both.tls?.['tls.crt']).toBe(start.tls?.['tls.crt']);
    expect(both.tls?.['ca.crt']).toBe(both.caBundle);
  });

  it('reissues for a new host, and drops an old CA once it has expired', () => {
    const moreHosts = planCertificates(issued, {
      ...policy,
      hosts: [...policy.hosts, 'other.svc'],
    });
    expect(moreHosts.why).toEqual(['the serving certificate does not cover every host']);
    const expired = Buffer.from(issueCa(T0 - 400 * DAY, 300 * DAY).certPem).toString('base64');
    const withOld = { ...issued, ca: { ...issued.ca, 'previous.crt': expired } };
    const dropped = planCertificates({ ...withOld, nowMs: T0 + DAY }, policy);
    expect(dropped.ca).toBeDefined();
    expect(dropped.ca?.['previous.crt']).toBeUndefined();
  });
});

describe('serialNumberHex', () => {
  // DER wants an INTEGER in its fewest bytes and a serial positive; Go's and OpenSSL's parsers
  // refuse a certificate whose serial has a needless leading zero byte ("illegal padding").
  const derOf = (hex: string) => Buffer.from(hex, 'hex');
  it.each([
    ['all zeros', Buffer.alloc(16, 0x00)],
    ['a zero byte, then one below 0x80', Buffer.from([0x00, 0x00, 0x12, ...Array(13).fill(7)])],
    ['all ones', Buffer.alloc(16, 0xff)],
    ['top bit set', Buffer.from([0x80, ...Array(15).fill(0)])],
  ])('is positive, 16 bytes and minimally encoded from %s', (_name, random) => {
    const der = derOf(serialNumberHex(random));
    expect(der).toHaveLength(16);
    expect(der[0]).toBeGreaterThan(0);
    expect((der[0] ?? 0) & 0x80).toBe(0);
  });

  it('keeps the randomness it is given past the first byte', () => {
    const random = Buffer.from([...Array(16).keys()].map((i) => i * 13));
    expect(derOf(serialNumberHex(random)).subarray(1)).toEqual(random.subarray(1));
  });
});

describe('assertSignerInstalled', () => {
  it('passes when node-forge can be found', () => {
    expect(() => assertSignerInstalled()).not.toThrow();
  });

  it('fails at once, naming the module and both ways out, when it cannot', () => {
    const missing = (id: string): string => {
      throw new Error(`Cannot find module '${id}'\nRequire stack:\n- certificates.js`);
    };
    expect(() => assertSignerInstalled(missing)).toThrow(
      /node-forge, which signs the webhook certificates, cannot be found \(Cannot find module 'node-forge'\); reinstall .* --webhook-certificates=none/,
    );
  });
});
