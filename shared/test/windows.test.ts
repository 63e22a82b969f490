// Maintenance windows (shared/src/rollout/windows.ts) decide when a wave may start restarts. The rules:
// a window is a span of local wall-clock time in an IANA zone on chosen days; a span whose end
// is not after its start runs past midnight and belongs to the day it starts on; 24:00 is the
// midnight that ends the day; spans are half-open (open at start, closed at end); no windows
// means always open. When open, closesAtMs says when restarts must stop; when closed,
// nextOpenMs says exactly when they may start again (the planner rechecks at that instant).

import { describeWindow, parseConfig, windowState, type Weekday } from '../src';

import { at, win } from './windows-fixtures';

describe('windowState in UTC', () => {
  it('is always open without windows, with no closing time', () => {
    expect(windowState([], at('2026-05-01T12:00:00Z'))).toEqual({ open: true });
  });

  it('is open from the start (inclusive) to the end (exclusive) of a daytime window', () => {
    const w = [win('09:00', '17:00')];
    expect(windowState(w, at('2026-05-01T08:59:59.999Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-01T09:00:00Z'),
    });
    expect(windowState(w, at('2026-05-01T09:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-01T17:00:00Z'),
    });
    expect(windowState(w, at('2026-05-01T16:59:59.999Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-01T17:00:00Z'),
    });
    // At the end it is closed, and the next opening is tomorrow's start.
    expect(windowState(w, at('2026-05-01T17:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-02T09:00:00Z'),
    });
  });

  it('runs an overnight window (end before start) past midnight', () => {
    const w = [win('22:00', '04:00')];
    expect(windowState(w, at('2026-05-01T23:30:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-02T04:00:00Z'),
    });
    // After midnight the window that started yesterday is still open.
    expect(windowState(w, at('2026-05-02T03:59:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-02T04:00:00Z'),
    });
    expect(windowState(w, at('2026-05-02T04:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-02T22:00:00Z'),
    });
  });

  it('opens only on the chosen days, and an overnight span belongs to the day it starts', () => {
    const weekend = [win('01:00', '05:00', { days: ['Sat', 'Sun'] })];
    // Friday noon: the next opening is Saturday 01:00.
    expect(windowState(weekend, at('2026-05-01T12:00:00Z')).nextOpenMs).toBe(
      at('2026-05-02T01:00:00Z'),
    );
    expect(windowState(weekend, at('2026-05-03T02:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-03T05:00:00Z'),
    });
    // Monday 02:00 is in the hours but not on the days: next Saturday.
    expect(windowState(weekend, at('2026-05-04T02:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-09T01:00:00Z'),
    });

    const fridayNight = [win('22:00', '04:00', { days: ['Fri'] })];
    // Saturday 02:00 is inside Friday's span.
    expect(windowState(fridayNight, at('2026-05-02T02:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-02T04:00:00Z'),
    });
    // Saturday 23:00 is in the hours, but Saturday is not a chosen day: next Friday.
    expect(windowState(fridayNight, at('2026-05-02T23:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-08T22:00:00Z'),
    });
  });

  it('takes 24:00 as the midnight that ends the day', () => {
    const w = [win('20:00', '24:00', { days: ['Sat'] })];
    expect(windowState(w, at('2026-05-02T23:59:59Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-03T00:00:00Z'),
    });
    // Sunday 00:00 is past the end, not the start of another span: Sunday is not chosen.
    expect(windowState(w, at('2026-05-03T00:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-05-09T20:00:00Z'),
    });
    // 00:00 to 24:00 is the whole day.
    const monday = [win('00:00', '24:00', { days: ['Mon'] })];
    expect(windowState(monday, at('2026-05-04T00:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-05T00:00:00Z'),
    });
    expect(windowState(monday, at('2026-05-03T23:59:59Z')).nextOpenMs).toBe(
      at('2026-05-04T00:00:00Z'),
    );
  });

  it('with several windows, opens at the earliest next start and closes at the latest open end', () => {
    const w = [win('10:00', '12:00'), win('11:00', '14:00'), win('16:00', '17:00')];
    expect(windowState(w, at('2026-05-01T09:00:00Z')).nextOpenMs).toBe(at('2026-05-01T10:00:00Z'));
    // Both of the overlapping windows are open at 11:30: restarts may go on until 14:00.
    expect(windowState(w, at('2026-05-01T11:30:00Z')).closesAtMs).toBe(at('2026-05-01T14:00:00Z'));
    expect(windowState(w, at('2026-05-01T14:30:00Z')).nextOpenMs).toBe(at('2026-05-01T16:00:00Z'));
  });

  // closesAtMs is when restarts must stop: windows that follow on without a gap (the config
  // error itself recommends 00:00-24:00 for whole days) close where the last of them ends, not
  // at the seam, where the state is still open.
  it('closesAtMs is an instant at which the state is closed, across back-to-back windows', () => {
    const weekend = [win('00:00', '24:00', { days: ['Sat', 'Sun'] })];
    const s = windowState(weekend, at('2026-05-02T12:00:00Z'));
    expect(s.closesAtMs).toBe(at('2026-05-04T00:00:00Z'));
  });

  it('describes a window in one line', () => {
    expect(
      describeWindow(win('01:00', '05:00', { days: ['Sat', 'Sun'], timeZone: 'Europe/Berlin' })),
    ).toBe('Sat,Sun 01:00-05:00 Europe/Berlin');
  });
});

describe('windowState in a zone with daylight saving time (Europe/Berlin, 2026)', () => {
  // Clocks go forward on Sunday 29 March at 01:00Z (02:00 CET becomes 03:00 CEST) and back on
  // Sunday 25 October at 01:00Z (03:00 CEST becomes 02:00 CET).
  const berlin = (start: string, end: string, days?: Weekday[]) =>
    win(start, end, { timeZone: 'Europe/Berlin', days });

  it('follows local noon across the spring change: UTC+1 before, UTC+2 after', () => {
    const noon = [berlin('12:00', '13:00')];
    expect(windowState(noon, at('2026-03-28T10:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-03-28T11:00:00Z'),
    });
    expect(windowState(noon, at('2026-03-28T12:00:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-03-29T10:00:00Z'),
    });
    expect(windowState(noon, at('2026-03-29T10:30:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-03-29T11:00:00Z'),
    });
  });

  it('follows local noon across the autumn change: UTC+2 before, UTC+1 after', () => {
    const noon = [berlin('12:00', '13:00')];
    expect(windowState(noon, at('2026-10-24T09:00:00Z')).nextOpenMs).toBe(
      at('2026-10-24T10:00:00Z'),
    );
    expect(windowState(noon, at('2026-10-24T11:00:00Z')).nextOpenMs).toBe(
      at('2026-10-25T11:00:00Z'),
    );
  });

  it('a window across the spring change is an hour shorter in real time', () => {
    const night = [berlin('01:00', '05:00', ['Sun'])];
    // 01:00 CET is 00:00Z; 05:00 CEST is 03:00Z: three real hours.
    expect(windowState(night, at('2026-03-28T23:00:00Z')).nextOpenMs).toBe(
      at('2026-03-29T00:00:00Z'),
    );
    expect(windowState(night, at('2026-03-29T00:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-03-29T03:00:00Z'),
    });
  });

  it('a window across the autumn change is an hour longer in real time', () => {
    const night = [berlin('01:00', '05:00', ['Sun'])];
    // 01:00 CEST is 23:00Z the day before; 05:00 CET is 04:00Z: five real hours.
    expect(windowState(night, at('2026-10-24T22:00:00Z')).nextOpenMs).toBe(
      at('2026-10-24T23:00:00Z'),
    );
    expect(windowState(night, at('2026-10-25T03:59:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-10-25T04:00:00Z'),
    });
  });

  it('an overnight window from Saturday into the spring-change Sunday', () => {
    const w = [berlin('22:00', '04:00', ['Sat'])];
    // 22:00 CET is 21:00Z; 04:00 CEST is 02:00Z.
    expect(windowState(w, at('2026-03-28T20:00:00Z')).nextOpenMs).toBe(at('2026-03-28T21:00:00Z'));
    expect(windowState(w, at('2026-03-29T01:30:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-03-29T02:00:00Z'),
    });
  });

  it('a window in the repeated autumn hour opens at its later occurrence, for one real hour', () => {
    // 02:00-03:00 local happens twice on 25 October; the window takes the second (CET) one.
    const w = [berlin('02:00', '03:00', ['Sun'])];
    expect(windowState(w, at('2026-10-25T00:30:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-10-25T01:00:00Z'),
    });
    expect(windowState(w, at('2026-10-25T01:00:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-10-25T02:00:00Z'),
    });
  });

  // The local times 02:00-02:59 do not exist on 29 March. A window wholly inside that hour does
  // not happen that day, so the next opening is Monday's: an opening announced for Sunday would
  // wake the planner for nothing and make `outrigger status` say a wrong "next opens at".
  it('a window inside the skipped spring hour is not announced as opening that day', () => {
    const w = [berlin('02:00', '03:00')];
    const s = windowState(w, at('2026-03-29T00:10:00Z'));
    expect(s).toEqual({ open: false, nextOpenMs: at('2026-03-30T00:00:00Z') });
  });

  // A start that the clocks skip opens just after the gap: 02:30 on 29 March opens at 03:00
  // CEST (01:00Z), not at 03:30 CEST (the wall time shifted by the gap), which would turn
  // 02:30-03:15 into a span that ends before it begins.
  it('a window starting inside the skipped hour opens when the gap ends', () => {
    expect(windowState([berlin('02:30', '04:00', ['Sun'])], at('2026-03-29T00:10:00Z'))).toEqual({
      open: false,
      nextOpenMs: at('2026-03-29T01:00:00Z'),
    });
    // 02:30-03:15 is open from 03:00 to 03:15 CEST.
    expect(windowState([berlin('02:30', '03:15', ['Sun'])], at('2026-03-29T01:05:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-03-29T01:15:00Z'),
    });
  });

  it('uses each window in its own zone', () => {
    const w = [win('09:00', '10:00', { timeZone: 'Asia/Tokyo' }), berlin('09:00', '10:00')];
    // 09:00 JST is 00:00Z; 09:00 CEST is 07:00Z.
    expect(windowState(w, at('2026-05-01T00:30:00Z'))).toEqual({
      open: true,
      closesAtMs: at('2026-05-01T01:00:00Z'),
    });
    expect(windowState(w, at('2026-05-01T01:00:00Z')).nextOpenMs).toBe(at('2026-05-01T07:00:00Z'));
    // India is UTC+05:30: offsets that are not whole hours work too.
    const kolkata = [win('09:00', '10:00', { timeZone: 'Asia/Kolkata' })];
    expect(windowState(kolkata, at('2026-05-01T00:00:00Z')).nextOpenMs).toBe(
      at('2026-05-01T03:30:00Z'),
    );
  });
});

describe('windows in the configuration', () => {
  const withWindows = (...items: string[]): string =>
    ['rollout:', '  windows:', ...items.map((i) => `    - ${i}`)].join('\n');

  it('reads a window, with every day and UTC by default; YAML reads 22:00 as a string', () => {
    const result = parseConfig(withWindows('{start: 22:00, end: 04:00}'));
    expect(result).toMatchObject({
      ok: true,
      config: { rollout: { windows: [win('22:00', '04:00')] } },
    });
    const full = parseConfig(
      withWindows('{days: [Sat, Sun], start: "01:00", end: "24:00", timeZone: Europe/Berlin}'),
    );
    expect(full).toMatchObject({
      ok: true,
      config: {
        rollout: {
          windows: [win('01:00', '24:00', { days: ['Sat', 'Sun'], timeZone: 'Europe/Berlin' })],
        },
      },
    });
    expect(parseConfig('')).toMatchObject({ ok: true, config: { rollout: { windows: [] } } });
  });

  const W = '.rollout.windows[0]';
  it.each<[string, string, string, RegExp]>([
    [
      'a time zone the runtime does not know',
      '{start: "01:00", end: "02:00", timeZone: Mars/Olympus}',
      `${W}.timeZone`,
      /is not a time zone this runtime knows; use an IANA name such as Europe\/Berlin; got "Mars\/Olympus"/,
    ],
    [
      'an empty time zone',
      '{start: "01:00", end: "02:00", timeZone: ""}',
      `${W}.timeZone`,
      /must be an IANA time zone/,
    ],
    [
      'start equal to end',
      '{start: "22:00", end: "22:00"}',
      `${W}.end`,
      /must differ from start; for a whole day use start "00:00" and end "24:00"/,
    ],
    [
      'an hour past 23 in start',
      '{start: "25:00", end: "02:00"}',
      `${W}.start`,
      /must be a local time HH:MM from 00:00 to 23:59; got "25:00"/,
    ],
    ['24:00 as a start', '{start: "24:00", end: "02:00"}', `${W}.start`, /from 00:00 to 23:59/],
    ['a single-digit hour', '{start: "7:00", end: "09:00"}', `${W}.start`, /got "7:00"/],
    ['minutes past 59', '{start: "07:60", end: "09:00"}', `${W}.start`, /got "07:60"/],
    [
      'an end past 24:00',
      '{start: "22:00", end: "24:30"}',
      `${W}.end`,
      /must be a local time HH:MM from 00:00 to 24:00; got "24:30"/,
    ],
    ['seconds in a time', '{start: "22:00:00", end: "23:00"}', `${W}.start`, /got "22:00:00"/],
    ['a missing end', '{start: "22:00"}', W, /must have start and end/],
    [
      'no days',
      '{days: [], start: "01:00", end: "02:00"}',
      `${W}.days`,
      /must name at least one day/,
    ],
    [
      'a day spelt out',
      '{days: [Monday], start: "01:00", end: "02:00"}',
      `${W}.days[0]`,
      /must be one of Mon, Tue, Wed, Thu, Fri, Sat, Sun; got string "Monday"/,
    ],
    [
      'a misspelt field',
      '{start: "01:00", end: "02:00", timezone: UTC}',
      `${W}.timezone`,
      /unknown field/,
    ],
  ])('rejects %s, naming the field', (_name, item, path, message) => {
    const result = parseConfig(withWindows(item));
    if (result.ok) throw new Error('expected the configuration to be rejected');
    expect(result.errors).toContainEqual(
      expect.objectContaining({ path, line: 3, message: expect.stringMatching(message) }),
    );
  });

  it('names the index of the bad window among several', () => {
    const result = parseConfig(
      withWindows(
        '{start: "01:00", end: "02:00"}',
        '{start: "01:00", end: "02:00", timeZone: Nowhere}',
      ),
    );
    expect(result).toMatchObject({
      ok: false,
      errors: [{ path: '.rollout.windows[1].timeZone', line: 4 }],
    });
  });
});

// ---------------------------------------------------------------------------------------------
// Properties over random windows and instants.

// Zones with and without daylight saving time, and one with a half-hour offset. In all of the
// DST zones here the spring gap is the local hour 02:00-02:59.
