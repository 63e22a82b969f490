// A coordination.k8s.io/v1 Lease as the API serves it, and what its fields say: who holds it,
// when the holder last renewed it, whether it is free. Its times are MicroTime, RFC 3339 with
// microseconds as the API server writes them (2026-05-04T10:00:00.123456Z), and are read
// strictly: a time that does not parse is an error naming the Lease and the field, never a NaN
// that quietly makes the Lease look held for ever (or free).

import type { V1ObjectMeta } from '@kubernetes/client-node';

/** A Lease's spec as JSON: its times are RFC 3339 strings with microseconds. */
export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease {
  apiVersion?: string;
  kind?: string;
  metadata?: V1ObjectMeta;
  spec?: LeaseSpec;
}

export const leasesPath = (namespace: string, name?: string): string =>
  `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases${name ? `/${name}` : ''}`;

/** A Lease time that is not RFC 3339: the Lease was written by hand or by a broken client. */
export class LeaseTimeError extends Error {
  constructor(
    /** NAMESPACE/NAME of the Lease. */
    readonly lease: string,
    /** The field, such as spec.renewTime. */
    readonly field: string,
    readonly value: string,
  ) {
    const [namespace, name] = lease.split('/');
    super(
      `Lease ${lease}: ${field} ${JSON.stringify(value)} is not an RFC 3339 time (such as 2026-05-04T10:00:00.000000Z); delete the Lease (kubectl -n ${namespace ?? ''} delete lease ${name ?? ''}) and the controller writes a new one`,
    );
    this.name = 'LeaseTimeError';
  }
}

const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/** The UTC time the fields name, or undefined for a date or time of day that does not exist. */
function wallClock(fields: number[], millis: number): number | undefined {
  const [year = NaN, month = NaN, day = NaN, hour = NaN, minute = NaN, second = NaN] = fields;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  const d = new Date(utc);
  const read = [
    d.getUTCFullYear(),
    d.getUTCMonth() + 1,
    d.getUTCDate(),
    d.getUTCHours(),
    d.getUTCMinutes(),
    d.getUTCSeconds(),
  ];
  return read.every((v, i) => v === fields[i]) ? utc : undefined;
}

/**
 * Milliseconds since the epoch of an RFC 3339 time (a MicroTime, or a Time in whole seconds), or
 * undefined when the text is not one, a date that does not exist (February 30) included.
 */
export function parseMicroTime(value: string): number | undefined {
  const m = RFC3339.exec(value);
  if (!m) return undefined;
  const millis = Number((m[7] ?? '0').padEnd(3, '0').slice(0, 3));
  const utc = wallClock(m.slice(1, 7).map(Number), millis);
  const [offsetHours, offsetMinutes] = [Number(m[9] ?? 0), Number(m[10] ?? 0)];
  if (utc === undefined || offsetHours > 23 || offsetMinutes > 59) return undefined;
  const sign = m[8] === '-' ? -1 : 1;
  return utc - sign * (offsetHours * 60 + offsetMinutes) * 60_000;
}

/** A MicroTime as the API server writes one: RFC 3339 with microseconds. */
export const formatMicroTime = (ms: number): string =>
  new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

const leaseRef = (lease: Lease): string =>
  `${lease.metadata?.namespace ?? ''}/${lease.metadata?.name ?? ''}`;

/**
 * When the holder last renewed the Lease (its renewTime, else its acquireTime), or undefined
 * when it never did. Throws a LeaseTimeError for a time that does not parse.
 */
export function leaseRenewedMs(lease: Lease): number | undefined {
  const spec = lease.spec ?? {};
  const field = spec.renewTime ? 'renewTime' : spec.acquireTime ? 'acquireTime' : undefined;
  if (!field) return undefined;
  const value = spec[field] ?? '';
  const ms = parseMicroTime(value);
  if (ms === undefined) throw new LeaseTimeError(leaseRef(lease), `spec.${field}`, value);
  return ms;
}

/**
 * Whether the Lease has no live holder at `nowMs`, by its own fields: no holder, never renewed,
 * or last renewed longer ago than its leaseDurationSeconds. Throws a LeaseTimeError for a time
 * that does not parse.
 */
export function leaseIsFree(lease: Lease | undefined, nowMs: number): boolean {
  if (!lease?.spec?.holderIdentity) return true;
  const renewed = leaseRenewedMs(lease);
  if (renewed === undefined) return true;
  return renewed + (lease.spec.leaseDurationSeconds ?? 0) * 1000 < nowMs;
}
