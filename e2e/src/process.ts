// Processes a test starts (the webhook, the controller, a client running as a ServiceAccount):
// started in their own process group with a chosen kubeconfig, output captured to a log file in
// the run's log folder, ready once a URL answers or a log line appears, stopped with SIGTERM and
// then SIGKILL. Each start is recorded on disk so global teardown can kill what a test leaked.

import { spawn, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { E2E_ENV } from './environment';
import { probe } from './http-probe';
import { freshPath, logDir } from './log-dir';
import { repoRoot } from './paths';
import { commandLine, groupMembers, processIdentity } from './proc-fs';
import { done, failed, pending, waitFor, type WaitOptions } from './wait';

/** When a started process counts as ready. */
export type Readiness =
  /** A GET to `url` answers 2xx (https: trust `ca`, or anything with `insecure`). */
  | { url: string; ca?: string; insecure?: boolean }
  /** A line of the process's output matches. */
  | { logLine: string | RegExp };

export interface StartOptions {
  /** Names the log file (<name>.log) and error messages. */
  name: string;
  /** The program, such as process.execPath (the Node.js running the tests). */
  command: string;
  args?: string[];
  /** Default: the repository root. */
  cwd?: string;
  /**
   * KUBECONFIG for the process. Without it the process gets no KUBECONFIG at all (never the
   * admin one of the tests by accident).
   */
  kubeconfig?: string;
  /** Added to the inherited environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  ready?: Readiness;
  /** How long to wait for `ready` (default 30 s). */
  readyTimeoutMs?: number;
  /** How long SIGTERM may take before SIGKILL (default 5 s). */
  stopTimeoutMs?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

interface StartRecord {
  pid: number;
  identity: string;
  command: string[];
  name: string;
  logFile: string;
}

const running = new Set<ManagedProcess>();
const DEFAULT_READY_TIMEOUT_MS = 30_000;
const DEFAULT_STOP_TIMEOUT_MS = 5_000;

export const describeExit = (status: ExitStatus): string =>
  status.signal ? `signal ${status.signal}` : `exit code ${String(status.code)}`;

function childEnvironment(options: StartOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.KUBECONFIG;
  delete env[E2E_ENV.kubeconfig];
  if (options.kubeconfig) env.KUBECONFIG = options.kubeconfig;
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/** Signals the process group `pid` leads (every process started here leads its own). */
function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the whole group is gone
  }
}

/** A process started by startProcess(). */
export class ManagedProcess {
  readonly exited: Promise<ExitStatus>;
  private status: ExitStatus | undefined;
  private stopping: Promise<ExitStatus> | undefined;

  /** The log file: a header naming the command, then stdout and stderr, then how it ended. */
  readonly logFile: string;
  /** Where its own output starts in the log file (after the header). */
  private readonly outputStart: number;

  constructor(
    private readonly child: ChildProcess & { pid: number },
    readonly options: StartOptions,
    files: { logFile: string; outputStart: number; recordFile: string },
  ) {
    this.logFile = files.logFile;
    this.outputStart = files.outputStart;
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        this.status = { code, signal };
        appendFileSync(files.logFile, `\n# ${options.name} ended: ${describeExit(this.status)}\n`);
        rmSync(files.recordFile, { force: true });
        running.delete(this);
        resolve(this.status);
      });
    });
  }

  get name(): string {
    return this.options.name;
  }

  get pid(): number {
    return this.child.pid;
  }

  /** How it ended, or undefined while it runs. */
  get exitStatus(): ExitStatus | undefined {
    return this.status;
  }

  /** What it wrote so far (stdout and stderr, interleaved), from byte `from` of the log on. */
  output(from = this.outputStart): string {
    return readFileSync(this.logFile).subarray(from).toString('utf8');
  }

  /** The log's current size: pass it to waitForLog({ after }) to wait for new output only. */
  outputSize(): number {
    return statSync(this.logFile).size;
  }

  /** The last `lines` lines of its output, for error messages. */
  tail(lines = 30): string {
    return this.output().trimEnd().split('\n').slice(-lines).join('\n');
  }

  private exitedEarly(waitingFor: string): string {
    return (
      `${this.name} ended (${describeExit(this.status ?? { code: null, signal: null })}) ` +
      `while waiting for ${waitingFor}; last lines of ${this.logFile}:\n${this.tail()}`
    );
  }

  /** Waits until a line of its output (written after byte `after`) matches; returns the line. */
  async waitForLog(
    pattern: string | RegExp,
    options: WaitOptions & { after?: number } = {},
  ): Promise<string> {
    const matches = (line: string): boolean =>
      typeof pattern === 'string' ? line.includes(pattern) : pattern.test(line);
    const description = `${this.name} to log ${String(pattern)}`;
    return waitFor(
      description,
      () => {
        const line = this.output(options.after).split('\n').find(matches);
        if (line !== undefined) return done(line);
        if (this.status) return failed(this.exitedEarly(description));
        return pending(`no such line yet; last lines of ${this.logFile}:\n${this.tail(10)}`);
      },
      { intervalMs: 100, ...options },
    );
  }

  /** Waits until a GET to `url` answers 2xx. */
  async waitForUrl(
    url: string,
    options: WaitOptions & { ca?: string; insecure?: boolean } = {},
  ): Promise<void> {
    const description = `${this.name} to answer 2xx at ${url}`;
    await waitFor(
      description,
      async () => {
        if (this.status) return failed(this.exitedEarly(description));
        const { status, body } = await probe(url, { ca: options.ca, insecure: options.insecure });
        return status >= 200 && status < 300 ? done(undefined) : pending(`HTTP ${status}: ${body}`);
      },
      { intervalMs: 100, ...options },
    );
  }

  /**
   * SIGTERM to its process group, SIGKILL after stopTimeoutMs if it is still running; also kills
   * what it left behind in its group. Resolves with how it ended; calling it again is fine.
   */
  stop(): Promise<ExitStatus> {
    this.stopping ??= this.terminate();
    return this.stopping;
  }

  /** SIGKILL to its process group at once: a crash, not a shutdown (no Lease released). */
  kill(): Promise<ExitStatus> {
    this.stopping ??= (async () => {
      signalGroup(this.pid, 'SIGKILL');
      return this.exited;
    })();
    return this.stopping;
  }

  private async terminate(): Promise<ExitStatus> {
    const grace = this.options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    // The whole group, also when the process itself has ended but left children behind.
    signalGroup(this.pid, 'SIGTERM');
    // ref: false, so a pending timer does not hold the test process open.
    const timer = sleep(grace, undefined, { ref: false }).then(() => undefined);
    const status = await Promise.race([this.exited, timer]);
    if (!status) signalGroup(this.pid, 'SIGKILL');
    const final = await this.exited;
    // Children it started share its process group: give them the same grace, then SIGKILL.
    const left = (): number => groupMembers(this.pid).length;
    await waitFor(
      `the children of ${this.options.name} to exit`,
      () => (left() === 0 ? done(undefined) : pending(`${left()} left`)),
      { timeoutMs: grace, intervalMs: 50 },
    ).catch(() => signalGroup(this.pid, 'SIGKILL'));
    return final;
  }
}

/** Creates the log file with a header; returns it and where the process's output will start. */
function openLog(options: StartOptions, argv: string[]): { logFile: string; outputStart: number } {
  const logFile = freshPath(logDir(), options.name, '.log');
  const header = `# ${argv.join(' ')}\n# started ${new Date().toISOString()}\n`;
  writeFileSync(logFile, header);
  return { logFile, outputStart: Buffer.byteLength(header) };
}

async function spawnLogged(
  options: StartOptions,
  argv: string[],
  logFile: string,
): Promise<ChildProcess & { pid: number }> {
  const fd = openSync(logFile, 'a');
  try {
    const child = spawn(options.command, options.args ?? [], {
      cwd: options.cwd ?? repoRoot,
      env: childEnvironment(options),
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    const { pid } = child;
    if (pid === undefined) {
      const error = await new Promise<Error>((resolve) => child.once('error', resolve));
      throw new Error(`starting ${options.name} (${argv.join(' ')}) failed: ${error.message}`);
    }
    child.on('error', () => undefined);
    return Object.assign(child, { pid });
  } finally {
    closeSync(fd);
  }
}

function recordStart(
  child: { pid: number },
  options: StartOptions,
  argv: string[],
  logFile: string,
): string {
  const record: StartRecord = {
    pid: child.pid,
    identity: processIdentity(child.pid) ?? `${child.pid}@?`,
    command: argv,
    name: options.name,
    logFile,
  };
  const file = path.join(logDir('processes'), `${child.pid}.json`);
  writeFileSync(file, JSON.stringify(record));
  return file;
}

async function waitUntilReady(
  managed: ManagedProcess,
  ready: Readiness,
  timeoutMs: number,
): Promise<void> {
  if ('url' in ready) await managed.waitForUrl(ready.url, { ...ready, timeoutMs });
  else await managed.waitForLog(ready.logLine, { timeoutMs });
}

/**
 * Starts a process and, if `ready` is given, waits until it is ready; a process that does not
 * become ready is stopped and the error shows the end of its log. Stop it with stop(), or
 * stopAllProcesses() in afterAll.
 */
export async function startProcess(options: StartOptions): Promise<ManagedProcess> {
  const argv = [options.command, ...(options.args ?? [])];
  const { logFile, outputStart } = openLog(options, argv);
  const child = await spawnLogged(options, argv, logFile);
  const recordFile = recordStart(child, options, argv, logFile);
  const managed = new ManagedProcess(child, options, { logFile, outputStart, recordFile });
  running.add(managed);
  if (!options.ready) return managed;
  try {
    await waitUntilReady(
      managed,
      options.ready,
      options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
    );
  } catch (error) {
    await managed.stop();
    throw error;
  }
  return managed;
}

/** Stops every process this test file started that is still running. */
export async function stopAllProcesses(): Promise<ExitStatus[]> {
  return Promise.all([...running].map((managed) => managed.stop()));
}

function readRecord(file: string): StartRecord | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as StartRecord;
  } catch {
    return undefined;
  }
}

function isStillOurs(record: StartRecord): boolean {
  return (
    processIdentity(record.pid) === record.identity &&
    commandLine(record.pid)?.join(' ') === record.command.join(' ')
  );
}

/**
 * Kills processes recorded under `<dir>/processes/` that still run (same pid, start time and
 * command line): those a test started and never stopped. `only` limits it to some pids. Returns
 * what it killed.
 */
export function reapLeftoverProcesses(dir: string, only?: (pid: number) => boolean): string[] {
  const recordDir = path.join(dir, 'processes');
  let files: string[];
  try {
    files = readdirSync(recordDir).filter((file) => file.endsWith('.json'));
  } catch {
    return [];
  }
  const killed: string[] = [];
  for (const file of files) {
    const record = readRecord(path.join(recordDir, file));
    if (record && only && !only(record.pid)) continue;
    if (record && isStillOurs(record)) {
      signalGroup(record.pid, 'SIGKILL');
      killed.push(`${record.name} (pid ${record.pid}, log ${record.logFile})`);
    }
    rmSync(path.join(recordDir, file), { force: true });
  }
  return killed;
}
