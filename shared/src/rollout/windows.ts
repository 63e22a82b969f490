// Maintenance windows: when a wave may start restarts. Each window is a span of local time on
// chosen days in an IANA time zone; a span whose end is not after its start runs past midnight
// into the next day. No windows means always open. Pure: the caller passes the time.

import { isRecord } from '../kubernetes/k8s';
import { describe, list, oneOf, quote, str, struct, type Field } from '../config/schema';

export const WEEKDAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export interface MaintenanceWindow {
  days: Weekday[];
  /** HH:MM, local time in `timeZone`. */
  start: string;
  /** HH:MM, or 24:00 for midnight at the end of the day. */
  end: string;
  timeZone: string;
}

const START = /^([01]\d|2[0-3]):[0-5]\d$/;
const END = /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/;

const formats = new Map<string, Intl.DateTimeFormat>();

function format(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formats.set(timeZone, f);
  }
  return f;
}

export function isTimeZone(name: string): boolean {
  try {
    format(name);
    return true;
  } catch {
    return false;
  }
}

const timeZone: Field<string> = (r, v, p) => {
  if (typeof v !== 'string' || v === '')
    return r.fail(p, `must be an IANA time zone such as UTC or Europe/Berlin; got ${describe(v)}`);
  if (!isTimeZone(v))
    return r.fail(
      p,
      `is not a time zone this runtime knows; use an IANA name such as Europe/Berlin; got ${quote(v)}`,
    );
  return v;
};

const windowFields = struct<MaintenanceWindow>({
  days: { read: list(oneOf(WEEKDAYS)), default: [...WEEKDAYS] },
  start: { read: str(START, 'a local time HH:MM from 00:00 to 23:59') },
  end: { read: str(END, 'a local time HH:MM from 00:00 to 24:00') },
  timeZone: { read: timeZone, default: 'UTC' },
});

export const maintenanceWindow: Field<MaintenanceWindow> = (r, v, p) => {
  const w = windowFields(r, v, p);
  if (!w) return undefined;
  if (w.start === undefined || w.end === undefined) {
    // An invalid start or end was reported already; only a missing one is reported here.
    const given = isRecord(v) ? v : {};
    if (given.start == null || given.end == null)
      r.fail(p, 'must have start and end (HH:MM local time), such as start: "22:00", end: "04:00"');
    return undefined;
  }
  if (minutes(w.start) === minutes(w.end))
    return r.fail(
      [...p, 'end'],
      'must differ from start; for a whole day use start "00:00" and end "24:00"',
    );
  if (w.days.length === 0)
    return r.fail([...p, 'days'], 'must name at least one day, such as [Sat, Sun]');
  return w;
};

const minutes = (hhmm: string): number => {
  const [h = '0', m = '0'] = hhmm.split(':');
  return Number(h) * 60 + Number(m);
};

interface Local {
  year: number;
  month: number;
  day: number;
  /** Minutes since local midnight. */
  minute: number;
  /** 0 = Monday. */
  weekday: number;
}

function local(ms: number, tz: string): Local {
  const parts: Record<string, number> = {};
  for (const p of format(tz).formatToParts(new Date(ms)))
    if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const year = parts.year ?? 1970;
  const month = parts.month ?? 1;
  const day = parts.day ?? 1;
  return {
    year,
    month,
    day,
    minute: (parts.hour ?? 0) * 60 + (parts.minute ?? 0),
    weekday: (new Date(Date.UTC(year, month - 1, day)).getUTCDay() + 6) % 7,
  };
}

/** The zone's offset from UTC at an instant, in milliseconds, to the minute. */
function offsetMs(ms: number, tz: string): number {
  const l = local(ms, tz);
  const asUtc = Date.UTC(l.year, l.month - 1, l.day) + l.minute * 60_000;
  return asUtc - Math.floor(ms / 60_000) * 60_000;
}

/**
 * The instant a local date (a Date whose UTC fields are the local ones) and minute of day fall
 * on; in a DST gap, the instant just after.
 */
function instant(date: Date, minute: number, tz: string): number {
  const wanted = date.getTime() + minute * 60_000;
  const first = wanted - offsetMs(wanted, tz);
  const second = wanted - offsetMs(first, tz);
  const found = [first, second].filter((t) => wallMs(t, tz) === wanted);
  if (found.length > 0) return Math.min(...found);
  // The wall time does not exist (the clocks skipped it): the first minute after the gap, found
  // by bisection between an instant before it and one after it.
  let lo = Math.min(first, second);
  let hi = Math.max(first, second);
  if (wallMs(lo, tz) > wanted) return lo;
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (wallMs(mid, tz) < wanted) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** The local wall-clock time of an instant, as milliseconds of a UTC date with the same fields. */
function wallMs(ms: number, tz: string): number {
  return Math.floor(ms / 60_000) * 60_000 + offsetMs(ms, tz);
}

const dayOn = (window: MaintenanceWindow, weekday: number): boolean =>
  window.days.includes(WEEKDAYS[((weekday % 7) + 7) % 7] ?? 'Mon');

export interface WindowState {
  open: boolean;
  /** When open: when the window now open closes (undefined: no windows, always open). */
  closesAtMs?: number;
  /** When closed: when the next window opens. */
  nextOpenMs?: number;
}

interface Span {
  from: number;
  to: number;
}

/** Every span of the window that starts on the local days from one before to eight after now. */
function spans(window: MaintenanceWindow, nowMs: number): Span[] {
  const today = local(nowMs, window.timeZone);
  const out: Span[] = [];
  for (let k = -1; k <= 8; k++) {
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + k));
    if (!dayOn(window, (date.getUTCDay() + 6) % 7)) continue;
    const start = minutes(window.start);
    const end = minutes(window.end);
    const endDate = new Date(date.getTime() + (end > start ? 0 : 86_400_000));
    out.push({
      from: instant(date, start, window.timeZone),
      to: instant(endDate, end, window.timeZone),
    });
  }
  return out;
}

/** Whether a wave may start restarts at `nowMs`, and when that changes. */
export function windowState(windows: readonly MaintenanceWindow[], nowMs: number): WindowState {
  if (windows.length === 0) return { open: true };
  // A span the clocks skipped entirely (a window inside the spring gap) is empty: never open.
  const all = windows.flatMap((w) => spans(w, nowMs)).filter((s) => s.from < s.to);
  const open = all.filter((s) => s.from <= nowMs && nowMs < s.to);
  if (open.length > 0) return { open: true, closesAtMs: closing(all, open) };
  const next = all.filter((s) => s.from > nowMs).map((s) => s.from);
  return next.length > 0 ? { open: false, nextOpenMs: Math.min(...next) } : { open: false };
}

/** When the open spans end, following spans that begin before (or as) the last one ends. */
function closing(all: readonly Span[], open: readonly Span[]): number {
  let end = Math.max(...open.map((s) => s.to));
  for (let chained = true; chained;) {
    const next = all.filter((s) => s.from <= end && s.to > end);
    chained = next.length > 0;
    if (chained) end = Math.max(...next.map((s) => s.to));
  }
  return end;
}

/** One line for logs and `outrigger status`: `Sat,Sun 01:00-05:00 Europe/Berlin`. */
export function describeWindow(window: MaintenanceWindow): string {
  return `${window.days.join(',')} ${window.start}-${window.end} ${window.timeZone}`;
}
