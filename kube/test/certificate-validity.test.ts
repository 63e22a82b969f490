// A certificate's validity, read from a real certificate (made by openssl): its period, how many
// days it has left, and the moment it expires (valid up to and including notAfter).

import { X509Certificate } from 'node:crypto';
import { makeServingCert } from '@outrigger/testkit';
import { certificateValidity, daysLeft, isExpired } from '../src';

const DAY = 86_400_000;

describe('certificateValidity', () => {
  const cert = new X509Certificate(makeServingCert({ days: 30 }).certPem);
  const validity = certificateValidity(cert);

  it('is the period the certificate was issued for', () => {
    expect(validity.lifetimeMs).toBe(30 * DAY);
    expect(validity.notAfterMs - validity.notBeforeMs).toBe(validity.lifetimeMs);
    // The same instants as the texts openssl prints (in whole seconds, GMT).
    expect(validity.notBeforeMs).toBe(Date.parse(cert.validFrom));
    expect(validity.notAfterMs).toBe(Date.parse(cert.validTo));
    expect(Math.abs(validity.notBeforeMs - Date.now())).toBeLessThan(DAY);
  });

  it('counts the days left, with their fraction, negative once expired', () => {
    const { notBeforeMs, notAfterMs } = validity;
    expect(daysLeft(validity, notBeforeMs)).toBe(30);
    expect(daysLeft(validity, notAfterMs - DAY / 2)).toBe(0.5);
    expect(daysLeft(validity, notAfterMs + DAY)).toBe(-1);
  });

  it('expires just after notAfter, not at it', () => {
    expect(isExpired(validity, validity.notBeforeMs)).toBe(false);
    expect(isExpired(validity, validity.notAfterMs)).toBe(false);
    expect(isExpired(validity, validity.notAfterMs + 1)).toBe(true);
  });

  it('names the certificate when its times are none', () => {
    const broken = {
      subject: 'CN=broken',
      validFrom: 'never',
      validTo: 'never',
      validFromDate: new Date(Number.NaN),
      validToDate: new Date(Number.NaN),
    } as unknown as X509Certificate;
    expect(() => certificateValidity(broken)).toThrow(
      /certificate "CN=broken": its validity \(notBefore never, notAfter never\) is not a time/,
    );
  });
});
