// What Linux's /proc says about a process: alive or not (a zombie is not: PID 1 here may never
// reap orphans), when it started (to tell a pid from a reused one), its process group.

import { readdirSync, readFileSync } from 'node:fs';

interface ProcStat {
  state: string;
  /** User and system CPU time, in clock ticks (100 a second). */
  cpuTicks: number;
  processGroup: number;
  /** Clock ticks since boot: with the pid, names one process for good. */
  startTime: string;
}

/** Fields of /proc/<pid>/stat, or undefined if there is no such process. */
function readStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses; skip to the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const [state, , processGroup] = fields;
  const startTime = fields[19];
  if (!state || !processGroup || !startTime) return undefined;
  return {
    state,
    processGroup: Number(processGroup),
    startTime,
    cpuTicks: Number(fields[11]) + Number(fields[12]),
  };
}

/** User and system CPU time of a process, in seconds (0 when it is gone). */
export function cpuSeconds(pid: number): number {
  return (readStat(pid)?.cpuTicks ?? 0) / 100;
}

/** Resident memory of a process in bytes (VmRSS; 0 when it is gone). */
export function rssBytes(pid: number): number {
  try {
    const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return Number(kib ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** True for a running (not zombie) process. Without /proc, asks the kernel with signal 0. */
export function isRunning(pid: number): boolean {
  const stat = readStat(pid);
  if (stat) return stat.state !== 'Z';
  try {
    process.kill(pid, 0);
    return !hasProcFs();
  } catch {
    return false;
  }
}

function hasProcFs(): boolean {
  try {
    readdirSync('/proc/self');
    return true;
  } catch {
    return false;
  }
}

/** "<pid>@<start time>" for a running process, else undefined. */
export function processIdentity(pid: number): string | undefined {
  const stat = readStat(pid);
  return stat && stat.state !== 'Z' ? `${pid}@${stat.startTime}` : undefined;
}

/** The command line of a process, or undefined. */
export function commandLine(pid: number): string[] | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

/** The running (not zombie) processes of a process group. */
export function groupMembers(processGroup: number): number[] {
  if (!hasProcFs()) {
    try {
      process.kill(-processGroup, 0);
      return [processGroup];
    } catch {
      return [];
    }
  }
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat && stat.processGroup === processGroup && stat.state !== 'Z')
      members.push(Number(entry));
  }
  return members;
}
