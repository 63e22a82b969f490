// Fixtures of the maintenance-window tests: instants and windows.

import { WEEKDAYS, type MaintenanceWindow, type Weekday } from '../src';

export const at = (iso: string): number => Date.parse(iso);
export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;

export function win(
  start: string,
  end: string,
  options: { days?: Weekday[]; timeZone?: string } = {},
): MaintenanceWindow {
  return {
    days: options.days ?? [...WEEKDAYS],
    start,
    end,
    timeZone: options.timeZone ?? 'UTC',
  };
}

// 2026-05-01 is a Friday; 2026-05-02 and -03 the weekend.
