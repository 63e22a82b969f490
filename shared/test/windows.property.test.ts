// windowState's properties over random windows, zones and instants, against a week-long oracle.

import fc from 'fast-check';
import { WEEKDAYS, windowState, type MaintenanceWindow } from '../src';

import { at, MINUTE, HOUR } from './windows-fixtures';

const ZONES = [
  'UTC',
  'Asia/Tokyo',
  'Asia/Kolkata',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Sydney',
];

/**
 * Local times as HH:MM. Times inside the spring gap (02:00-02:59) are left out: a window that
 * starts there has an empty or reversed span on the change day, which the failing tests above
 * pin down (windows.test.ts); here the rule is checked for every other window.
 */
const hhmm = fc
  .integer({ min: 0, max: 24 * 60 - 1 })
  .filter((m) => m < 120 || m >= 180)
  .map((m) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`);
const endHhmm = fc.oneof(hhmm, fc.constant('24:00'));

const windowArb: fc.Arbitrary<MaintenanceWindow> = fc
  .record({
    days: fc.subarray([...WEEKDAYS], { minLength: 1 }),
    start: hhmm,
    end: endHhmm,
    timeZone: fc.constantFrom(...ZONES),
  })
  .filter((w) => w.start !== w.end);

// Instants from 2024 to 2028 at millisecond resolution, and as often instants within three days
// of a DST change of one of the zones, where the interesting cases are.
const CHANGES = [
  '2026-03-08T07:00:00Z', // New York, spring
  '2026-03-29T01:00:00Z', // Berlin, spring
  '2026-04-04T16:00:00Z', // Sydney, autumn
  '2026-10-03T16:00:00Z', // Sydney, spring
  '2026-10-25T01:00:00Z', // Berlin, autumn
  '2026-11-01T06:00:00Z', // New York, autumn
].map(at);
const instantArb = fc.oneof(
  fc.integer({ min: at('2024-01-01T00:00:00Z'), max: at('2028-12-31T00:00:00Z') }),
  fc
    .tuple(fc.constantFrom(...CHANGES), fc.integer({ min: -3 * 24 * HOUR, max: 3 * 24 * HOUR }))
    .map(([t, d]) => t + d),
);

describe('windowState: properties', () => {
  it('closed: the next opening is in the future, open at that instant, and closed a minute before', () => {
    fc.assert(
      fc.property(
        fc.array(windowArb, { minLength: 1, maxLength: 3 }),
        instantArb,
        (windows, now) => {
          const s = windowState(windows, now);
          if (s.open) return;
          // Every window has at least one day, so some span starts within the next week.
          if (s.nextOpenMs === undefined) throw new Error('closed with no next opening');
          expect(s.nextOpenMs).toBeGreaterThan(now);
          expect(s.nextOpenMs - now).toBeLessThanOrEqual(8 * 24 * HOUR);
          expect(windowState(windows, s.nextOpenMs).open).toBe(true);
          // Spans start and end on whole minutes and none starts between now and the next
          // opening, so a minute before it (even if that is before now) nothing is open.
          expect(windowState(windows, s.nextOpenMs - MINUTE).open).toBe(false);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('open: the window closes in the future, and is still open just before', () => {
    fc.assert(
      fc.property(
        fc.array(windowArb, { minLength: 1, maxLength: 3 }),
        instantArb,
        (windows, now) => {
          const s = windowState(windows, now);
          if (!s.open) return;
          if (s.closesAtMs === undefined) throw new Error('open with no closing time');
          expect(s.closesAtMs).toBeGreaterThan(now);
          expect(windowState(windows, s.closesAtMs - 1).open).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('in UTC, agrees with plain week arithmetic', () => {
    const utcWindow = windowArb.map((w) => ({ ...w, timeZone: 'UTC' }));
    fc.assert(
      fc.property(
        fc.array(utcWindow, { minLength: 1, maxLength: 3 }),
        instantArb,
        (windows, now) => {
          const expected = weekOracle(windows, now);
          // Windows that chain round the whole week never close: windowState looks ahead only
          // so far, so only "open" is compared then.
          if (expected.open && expected.closesAtMs === undefined)
            expect(windowState(windows, now).open).toBe(true);
          else expect(windowState(windows, now)).toEqual(expected);
        },
      ),
      { numRuns: 400 },
    );
  });
});

const DAY = 24 * HOUR;
const WEEK = 7 * DAY;
const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3));
const mod = (a: number, m: number): number => ((a % m) + m) % m;

/** UTC windows by position in the week (Monday 00:00 = 0), without calendars or Intl. */
function weekOracle(windows: readonly MaintenanceWindow[], now: number) {
  // 1970-01-05 was a Monday.
  const pos = mod(now - 4 * DAY, WEEK);
  const spans = windows.flatMap((w) =>
    w.days.map((d) => {
      const from = WEEKDAYS.indexOf(d) * DAY + minutesOf(w.start) * MINUTE;
      const length = mod(minutesOf(w.end) - minutesOf(w.start), 24 * 60) * MINUTE;
      // An end of 24:00 after a start of 00:00 is the whole day, not an empty span.
      return { from, length: length === 0 ? DAY : length };
    }),
  );
  /** The ends of the spans open at `t` (a span starting exactly at `t` counts). */
  const endsAt = (t: number) => {
    const at = mod(t - 4 * DAY, WEEK);
    return spans
      .filter((s) => mod(at - s.from, WEEK) < s.length)
      .map((s) => t - mod(at - s.from, WEEK) + s.length);
  };
  const openEnds = endsAt(now);
  if (openEnds.length > 0) {
    // Back-to-back windows close only where the last of the chain ends.
    let end = Math.max(...openEnds);
    for (let more = endsAt(end); more.length > 0; more = endsAt(end)) {
      end = Math.max(...more);
      if (end > now + WEEK) return { open: true, closesAtMs: undefined };
    }
    return { open: true, closesAtMs: end };
  }
  const starts = spans.map((s) => now + (mod(s.from - pos, WEEK) || WEEK));
  return { open: false, nextOpenMs: Math.min(...starts) };
}
