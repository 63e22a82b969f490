// A certificate's validity period, read once for every part that asks when a certificate starts,
// when it expires and how long it has left: the controller renewing the webhook's certificates,
// the webhook reporting the expiry of the one it serves, and `outrigger check`.
// The times are the certificate's own (node reads them from the ASN.1), never a date string
// read again by the lax `new Date(text)`.

import type { X509Certificate } from 'node:crypto';

const DAY_MS = 86_400_000;

export interface CertificateValidity {
  /** notBefore, in milliseconds since the epoch. */
  notBeforeMs: number;
  /** notAfter, in milliseconds since the epoch: the last moment the certificate is valid. */
  notAfterMs: number;
  /** From notBefore to notAfter. */
  lifetimeMs: number;
}

/** The certificate's validity period; throws, naming the certificate, for a time that is none. */
export function certificateValidity(cert: X509Certificate): CertificateValidity {
  const notBeforeMs = cert.validFromDate.getTime();
  const notAfterMs = cert.validToDate.getTime();
  if (Number.isNaN(notBeforeMs) || Number.isNaN(notAfterMs))
    throw new Error(
      `certificate ${JSON.stringify(cert.subject)}: its validity (notBefore ${cert.validFrom}, notAfter ${cert.validTo}) is not a time; issue it again`,
    );
  return { notBeforeMs, notAfterMs, lifetimeMs: notAfterMs - notBeforeMs };
}

/** Past notAfter at `nowMs` (RFC 5280: a certificate is valid up to and including notAfter). */
export const isExpired = (validity: CertificateValidity, nowMs: number): boolean =>
  nowMs > validity.notAfterMs;

/** Days from `nowMs` to notAfter, with their fraction: negative once the certificate expired. */
export const daysLeft = (validity: CertificateValidity, nowMs: number): number =>
  (validity.notAfterMs - nowMs) / DAY_MS;
