// The memory of a process a test or benchmark started, read from outside it in /proc (Linux).

import { readFileSync } from 'node:fs';

/** A field of /proc/<pid>/status given in kB, in MiB. */
function statusMiB(pid: number, field: string): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024;
}

/** Resident memory of a process, in MiB. */
export function rssMiB(pid: number): number {
  return statusMiB(pid, 'VmRSS');
}

/** Resident memory of a process by kind (anonymous, file-backed such as code), in whole MiB. */
export function rssSplitMiB(pid: number): { anon: number; file: number } {
  return {
    anon: Math.round(statusMiB(pid, 'RssAnon')),
    file: Math.round(statusMiB(pid, 'RssFile')),
  };
}
