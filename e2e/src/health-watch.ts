// Probes processes' /healthz from a worker thread, every 150 ms each, so pauses of the test's
// own thread (a slow assertion, a garbage collection, a synchronous file read) never count as
// the probed process not answering. For each target it keeps the longest time between two
// answers (HTTP 200), counting from when probing began and, for a target no longer probed,
// up to when it was removed: the longest a kubelet would have seen it unanswering.

import { Worker } from 'node:worker_threads';

export interface TargetHealth {
  name: string;
  probes: number;
  answered: number;
  /** The longest time without an answer, so far (an open gap included). */
  longestGapMs: number;
  /** When that gap ended (or now, when it is still open), ISO 8601. */
  longestGapEnded: string;
  /** The last failure: an error or a status other than 200. */
  lastFailure: string;
  /** False once removed. */
  probing: boolean;
}

/** Runs in the worker: plain JavaScript, no imports of the harness (the worker has no ts). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const targets = new Map();
const gap = (t, now) => now - t.last;
function note(t, now) {
  const g = gap(t, now);
  if (g > t.longest) { t.longest = g; t.longestEnded = Date.now(); }
}
function probe(t) {
  t.inFlight = true;
  t.probes += 1;
  const req = http.get(t.url, { timeout: workerData.timeoutMs, agent: false }, (res) => {
    res.resume();
    res.on('end', () => {
      t.inFlight = false;
      if (!t.probing) return;
      if (res.statusCode === 200) { const now = performance.now(); note(t, now); t.last = now; t.answered += 1; }
      else t.lastFailure = new Date().toISOString() + ' HTTP ' + res.statusCode;
    });
    res.on('error', (e) => { t.inFlight = false; t.lastFailure = new Date().toISOString() + ' ' + e.message; });
  });
  req.on('timeout', () => req.destroy(new Error('no answer in ' + workerData.timeoutMs + ' ms')));
  req.on('error', (e) => { t.inFlight = false; t.lastFailure = new Date().toISOString() + ' ' + e.message; });
}
const timer = setInterval(() => {
  for (const t of targets.values()) if (t.probing && !t.inFlight) probe(t);
}, workerData.intervalMs);
function snapshot() {
  const now = performance.now();
  return [...targets.values()].map((t) => {
    const open = t.probing ? gap(t, now) : 0;
    const longest = Math.max(t.longest, open);
    return { name: t.name, probes: t.probes, answered: t.answered, longestGapMs: Math.round(longest),
      longestGapEnded: new Date(open >= t.longest && t.probing ? Date.now() : t.longestEnded).toISOString(),
      lastFailure: t.lastFailure, probing: t.probing };
  });
}
parentPort.on('message', (m) => {
  if (m.type === 'add') {
    const now = performance.now();
    targets.set(m.name, { name: m.name, url: m.url, last: now, longest: 0, longestEnded: Date.now(),
      probes: 0, answered: 0, lastFailure: '', probing: true, inFlight: false });
  } else if (m.type === 'remove') {
    const t = targets.get(m.name);
    if (t && t.probing) { note(t, performance.now()); t.probing = false; }
  }
  if (m.id !== undefined) parentPort.postMessage({ id: m.id, targets: snapshot() });
  if (m.type === 'stop') clearInterval(timer);
});
`;

export interface HealthWatchOptions {
  /** Between the end of one probe of a target and the next (default 150). */
  intervalMs?: number;
  /** A probe not answered in this long fails (default 2000). */
  timeoutMs?: number;
}

/** The worker thread and the targets it probes. */
export class HealthWatch {
  private readonly worker: Worker;
  private nextId = 0;
  private readonly waiting = new Map<number, (targets: TargetHealth[]) => void>();

  constructor(options: HealthWatchOptions = {}) {
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { intervalMs: options.intervalMs ?? 150, timeoutMs: options.timeoutMs ?? 2000 },
    });
    this.worker.on('message', (m: { id: number; targets: TargetHealth[] }) => {
      this.waiting.get(m.id)?.(m.targets);
      this.waiting.delete(m.id);
    });
  }

  private send(message: Record<string, unknown>): Promise<TargetHealth[]> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.worker.postMessage({ ...message, id });
    });
  }

  /** Starts probing `url` (a process that is ready now) under `name`, a name not used before. */
  async add(name: string, url: string): Promise<void> {
    await this.send({ type: 'add', name, url });
  }

  /** Stops probing `name`: call it before stopping the process on purpose. */
  async remove(name: string): Promise<void> {
    await this.send({ type: 'remove', name });
  }

  /** Every target so far, the removed ones included. */
  report(): Promise<TargetHealth[]> {
    return this.send({ type: 'report' });
  }

  /** Stops probing and ends the worker; returns the final report. */
  async stop(): Promise<TargetHealth[]> {
    const last = await this.send({ type: 'stop' });
    await this.worker.terminate();
    return last;
  }
}
