// What a benchmark reads of a process it started, from outside it: resident memory (from /proc,
// e2e/src/proc-fs.ts) with the V8 heap from its metrics, a full garbage collection through the inspector (the
// process runs with --inspect=127.0.0.1:PORT, in the benchmark only), and the durations its
// debug log reports.

import { metricSum, rssBytes } from '../src';

export interface Memory {
  rss: number;
  heap: number;
}

/** RSS and the V8 heap in use (live objects and garbage not yet collected). */
export async function memoryOf(pid: number, metricsPort: number, prefix: string): Promise<Memory> {
  return {
    rss: rssBytes(pid),
    heap: await metricSum(metricsPort, `${prefix}_nodejs_heap_size_used_bytes`),
  };
}

/** Samples a process's RSS every 100 ms until stopped; returns the highest. */
export function sampleRss(pid: number): () => number {
  let peak = rssBytes(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 100);
  return () => {
    clearInterval(timer);
    return Math.max(peak, rssBytes(pid));
  };
}

/** Calls methods of the process's inspector in order, each answered before the next. */
async function inspectorCalls(
  inspectPort: number,
  calls: readonly { method: string; params?: Record<string, unknown> }[],
): Promise<void> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectPort}/json/list`)).json()) as {
    webSocketDebuggerUrl: string;
  }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (!url) throw new Error(`no inspector target on port ${inspectPort}`);
  const socket = new WebSocket(url);
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error(`cannot reach the inspector at ${url}`));
  });
  try {
    for (const [index, call] of calls.entries()) {
      const id = index + 1;
      const answered = new Promise<void>((resolve, reject) => {
        socket.onmessage = (m: MessageEvent) => {
          const message = JSON.parse(String(m.data)) as {
            id?: number;
            error?: unknown;
            result?: { exceptionDetails?: unknown };
          };
          if (message.id !== id) return;
          const failure = message.error ?? message.result?.exceptionDetails;
          if (failure === undefined) resolve();
          else reject(new Error(`${call.method}: ${JSON.stringify(failure)}`));
        };
      });
      socket.send(JSON.stringify({ id, ...call }));
      await answered;
    }
  } finally {
    socket.close();
  }
}

/** A full garbage collection in the process, through its inspector. */
export function collectGarbage(inspectPort: number): Promise<void> {
  return inspectorCalls(inspectPort, [
    { method: 'HeapProfiler.enable' },
    { method: 'HeapProfiler.collectGarbage' },
  ]);
}

/**
 * The process writes a snapshot of its V8 heap to `file` (it collects garbage first). For
 * finding what a heap keeps: it takes seconds, and several times the heap's size in memory,
 * which the process may keep (its RSS afterwards says little).
 */
export function writeHeapSnapshot(inspectPort: number, file: string): Promise<void> {
  const expression = `process.getBuiltinModule('node:v8').writeHeapSnapshot(${JSON.stringify(file)})`;
  return inspectorCalls(inspectPort, [
    { method: 'Runtime.evaluate', params: { expression, awaitPromise: false } },
  ]);
}

interface LogEntry {
  message?: string;
  key?: string;
  durationMs?: number;
  timestamp?: string;
}

/** The entries of a JSON log with this message, in order. */
function* logged(log: string, message: string): Generator<LogEntry> {
  for (const line of log.split('\n')) {
    if (!line.includes(`"${message}"`)) continue;
    let entry: LogEntry;
    try {
      entry = JSON.parse(line) as LogEntry;
    } catch {
      continue; // A line cut by the process's end, or another program's output.
    }
    if (entry.message === message) yield entry;
  }
}

/** The durations (ms) of the debug lines with this message (and key, if given) in a JSON log. */
export function loggedDurations(log: string, message: string, key?: string): number[] {
  const out: number[] = [];
  for (const entry of logged(log, message))
    if ((key === undefined || entry.key === key) && typeof entry.durationMs === 'number')
      out.push(entry.durationMs);
  return out;
}

/** When the first log line with this message was written (ms since the epoch), if one was. */
export function firstLoggedAt(log: string, message: string): number | undefined {
  for (const entry of logged(log, message)) {
    const at = Date.parse(entry.timestamp ?? '');
    if (Number.isFinite(at)) return at;
  }
  return undefined;
}
