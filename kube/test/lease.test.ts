// Reading a Lease: its MicroTimes strictly (what the API server writes parses; anything else is
// an error naming the Lease and the field), and whether it is free at a given time.

import {
  LeaseTimeError,
  formatMicroTime,
  leaseIsFree,
  leaseRenewedMs,
  parseMicroTime,
  type Lease,
} from '../src';

const T0 = Date.parse('2026-05-04T10:00:00.000Z');
const SECOND = 1000;

const lease = (spec: Lease['spec']): Lease => ({
  metadata: { namespace: 'outrigger-system', name: 'outrigger-controller' },
  spec,
});

describe('parseMicroTime', () => {
  it.each([
    ['2026-05-04T10:00:00.000000Z', T0],
    ['2026-05-04T10:00:00.123456Z', T0 + 123],
    ['2026-05-04T10:00:00Z', T0],
    ['2026-05-04T10:00:00.5Z', T0 + 500],
    ['2026-05-04T12:30:00.000000+02:30', T0],
    ['2026-05-04T07:00:00-03:00', T0],
    ['2026-05-04t10:00:00z', T0],
    ['2024-02-29T00:00:00Z', Date.parse('2024-02-29T00:00:00Z')],
  ])('%s', (text, ms) => {
    expect(parseMicroTime(text)).toBe(ms);
  });

  it.each([
    '',
    'yesterday',
    '2026-05-04',
    '2026-05-04 10:00:00Z',
    '2026-05-04T10:00:00',
    '2026-05-04T10:00Z',
    '2026-02-30T00:00:00Z',
    '2025-02-29T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-05-04T24:00:00Z',
    '2026-05-04T10:60:00Z',
    '2026-05-04T10:00:60Z',
    '2026-05-04T10:00:00+24:00',
    '2026-05-04T10:00:00.1234567890Z',
    'Mon, 04 May 2026 10:00:00 GMT',
    '1777888800000',
  ])('%j is not a time', (text) => {
    expect(parseMicroTime(text)).toBeUndefined();
  });

  it('reads back every time formatMicroTime writes, to the millisecond', () => {
    for (const ms of [0, T0, T0 + 1, T0 + 999, Date.parse('2099-12-31T23:59:59.999Z')]) {
      expect(formatMicroTime(ms)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(parseMicroTime(formatMicroTime(ms))).toBe(ms);
    }
  });
});

describe('leaseIsFree', () => {
  const held = { holderIdentity: 'a', leaseDurationSeconds: 15 };

  it('is free without a holder, or with one that never renewed', () => {
    expect(leaseIsFree(undefined, T0)).toBe(true);
    expect(leaseIsFree(lease({ renewTime: formatMicroTime(T0) }), T0)).toBe(true);
    expect(leaseIsFree(lease({ ...held, holderIdentity: '' }), T0)).toBe(true);
    expect(leaseIsFree(lease(held), T0)).toBe(true);
  });

  it('is held for the lease duration after the last renewal, then free', () => {
    const l = lease({ ...held, renewTime: formatMicroTime(T0) });
    expect(leaseIsFree(l, T0)).toBe(false);
    expect(leaseIsFree(l, T0 + 15 * SECOND)).toBe(false);
    expect(leaseIsFree(l, T0 + 15 * SECOND + 1)).toBe(true);
  });

  it('counts from the acquireTime when the Lease was never renewed', () => {
    const l = lease({ ...held, acquireTime: formatMicroTime(T0) });
    expect(leaseRenewedMs(l)).toBe(T0);
    expect(leaseIsFree(l, T0 + 10 * SECOND)).toBe(false);
    expect(leaseIsFree(l, T0 + 16 * SECOND)).toBe(true);
  });

  it('throws, naming the Lease, the field and the fix, for a time that does not parse', () => {
    const l = lease({ ...held, renewTime: 'soon', acquireTime: formatMicroTime(T0) });
    expect(() => leaseIsFree(l, T0)).toThrow(LeaseTimeError);
    expect(() => leaseIsFree(l, T0)).toThrow(
      'Lease outrigger-system/outrigger-controller: spec.renewTime "soon" is not an RFC 3339 time (such as 2026-05-04T10:00:00.000000Z); delete the Lease (kubectl -n outrigger-system delete lease outrigger-controller) and the controller writes a new one',
    );
    const acquired = lease({ ...held, acquireTime: '2026-05-04' });
    expect(() => leaseRenewedMs(acquired)).toThrow(/spec\.acquireTime "2026-05-04"/);
  });
});
