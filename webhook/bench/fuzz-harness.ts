// The real outrigger-webhook binary under hostile traffic, measured from outside: its resident
// memory from /proc, its /healthz latency probed as a kubelet would (a new connection each
// time), and raw TLS clients for what an HTTP client will not do (slow, idle, truncated). Used by
// `make fuzz` (fuzz.ts) and by the fuzz suite (webhook/test/fuzz.test.ts, hostile.test.ts).

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { connect, type TLSSocket } from 'node:tls';
import { Worker } from 'node:worker_threads';
import { makeServingCert, rssMiB, shippedEnv } from '@outrigger/testkit';
import type { FuzzCase } from './fuzz-cases';

/** The binary, from the sources (jest) or from dist/ (the compiled `make fuzz`). */
const BIN =
  [join(__dirname, '..', 'bin'), join(__dirname, '..', '..', 'bin')]
    .map((dir) => join(dir, 'outrigger-webhook.js'))
    .find((file) => existsSync(file)) ?? 'outrigger-webhook.js';

export interface RunningWebhook {
  child: ChildProcess;
  pid: number;
  httpsPort: number;
  metricsPort: number;
  ca: string;
  /** Resolves with the exit code when the process ends. */
  exited: Promise<number | null>;
  /** Set once the process has ended. */
  exitCode: () => number | null | undefined;
  log: () => string;
  stop: () => Promise<number | null>;
}

/** The shipped environment; FUZZ_NODE_OPTIONS adds Node flags (--cpu-prof, --trace-gc). */
function targetEnv(): NodeJS.ProcessEnv {
  const shipped = shippedEnv('webhook');
  const extra = process.env.FUZZ_NODE_OPTIONS ?? '';
  const nodeOptions = `${shipped.NODE_OPTIONS ?? ''} ${extra}`.trim();
  return { ...process.env, ...shipped, NODE_OPTIONS: nodeOptions };
}

/** Starts the binary standalone (files, no API), as the chart runs it but on 127.0.0.1. */
export function startFuzzTarget(extra: string[] = []): Promise<RunningWebhook> {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-fuzz-'));
  const cert = makeServingCert({ dir });
  const config = join(dir, 'config.yaml');
  writeFileSync(config, 'proxy:\n  logLevel: info\n');
  // prettier-ignore
  const child = spawn(process.execPath, [
    BIN,
    '--listen', '127.0.0.1:0',
    '--metrics-listen', '127.0.0.1:0',
    '--tls-cert-file', cert.certFile,
    '--tls-key-file', cert.keyFile,
    '--config-file', config,
    '--shutdown-delay-seconds', '0',
    '--log-level', 'info',
    ...extra,
  ], { stdio: ['ignore', 'pipe', 'pipe'], env: targetEnv() });
  // The start of the log whole, then only the last chunks: under fuzzing the log is large,
  // and a reader slow to drain the pipe would block the webhook's writes to it.
  let head = '';
  const tail: string[] = [];
  const output = (): string => `${head}${tail.join('')}`;
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (c) => {
      code = c;
      resolve(c);
    }),
  );
  let started = false;
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer): void => {
      if (started) {
        tail.push(chunk.toString());
        if (tail.length > 20) tail.shift();
        return;
      }
      head += chunk.toString();
      const line = head.split('\n').find((l) => l.includes('outrigger-webhook serving'));
      if (!line) return;
      started = true;
      const entry = JSON.parse(line) as { https: number; metrics: number };
      resolve({
        child,
        pid: child.pid ?? 0,
        httpsPort: entry.https,
        metricsPort: entry.metrics,
        ca: cert.caPem,
        exited,
        exitCode: () => code,
        log: output,
        stop: () => {
          child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    void exited.then((c) => reject(new Error(`the webhook exited with ${c}:\n${output()}`)));
  });
}

export interface Reply {
  status: number;
  body: string;
}

/** POSTs one case to /mutate/pods; a connection error is a reply with status 0. */
export function post(target: RunningWebhook, agent: Agent, c: FuzzCase): Promise<Reply> {
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: target.httpsPort,
        path: '/mutate/pods',
        method: 'POST',
        agent,
        ca: [target.ca],
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (b: Buffer) => chunks.push(b));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
        res.on('error', (e) => resolve({ status: 0, body: String(e) }));
      },
    );
    req.on('error', (e) => resolve({ status: 0, body: String(e) }));
    req.end(c.body);
  });
}

/** Whether a reply is the one the case is owed; a string says why not. */
export function judge(c: FuzzCase, reply: Reply): true | string {
  const ok = (): true | string => {
    try {
      const review = JSON.parse(reply.body) as { response?: { uid?: string; allowed?: boolean } };
      if (review.response?.uid !== c.uid) return `uid ${String(review.response?.uid)}`;
      if (review.response?.allowed !== true) return 'not allowed';
      return true;
    } catch {
      return 'a 200 whose body is not an AdmissionReview';
    }
  };
  const answer = (): true | string => {
    switch (c.expect) {
      case 'allowed':
        return reply.status === 200 ? ok() : `HTTP ${reply.status}`;
      case 'bad-request':
        return reply.status === 400 ? true : `HTTP ${reply.status}`;
      case 'allowed-or-bad':
        if (reply.status === 400) return true;
        return reply.status === 200 ? ok() : `HTTP ${reply.status}`;
      case 'too-large':
        // Refused from its declared length: the client may still be writing when the server
        // answers and closes, and then sees its write fail instead of the 413.
        if (reply.status === 0 && /EPIPE|ECONNRESET/.test(reply.body)) return true;
        return reply.status === 413 ? true : `HTTP ${reply.status}`;
    }
  };
  const verdict = answer();
  return verdict === true ? true : `${c.kind}: ${verdict}: ${reply.body.slice(0, 300)}`;
}

/**
 * Probes /healthz every `intervalMs` on a new connection, as a kubelet does, from a thread of
 * its own: the load generator's own pauses (building megabyte bodies) must not count as the
 * webhook's. A probe unanswered within 2 s, or not 200, is a failure.
 */
export class HealthProber {
  latenciesMs: number[] = [];
  failures = 0;
  private worker: Worker | undefined;

  constructor(
    private readonly port: number,
    private readonly intervalMs = 100,
  ) {}

  start(): void {
    this.worker = new Worker(PROBER, {
      eval: true,
      workerData: { port: this.port, every: this.intervalMs },
    });
  }

  /** Stops probing and collects what was measured. */
  async stop(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (!worker) return;
    const result = new Promise<{ latencies: number[]; failures: number }>((resolve) =>
      worker.once('message', resolve),
    );
    worker.postMessage('stop');
    const { latencies, failures } = await result;
    this.latenciesMs = latencies;
    this.failures = failures;
    await worker.terminate();
  }
}

const PROBER = `
const { get } = require('node:http');
const { parentPort, workerData } = require('node:worker_threads');
const { performance } = require('node:perf_hooks');
const latencies = [];
let failures = 0;
const probe = () => {
  const started = performance.now();
  const req = get({ host: '127.0.0.1', port: workerData.port, path: '/healthz', agent: false, timeout: 2000 }, (res) => {
    res.resume();
    res.on('end', () => { latencies.push(performance.now() - started); if (res.statusCode !== 200) failures++; });
  });
  req.on('timeout', () => req.destroy(new Error('timeout')));
  req.on('error', () => { failures++; latencies.push(performance.now() - started); });
};
const timer = setInterval(probe, workerData.every);
parentPort.on('message', () => { clearInterval(timer); setTimeout(() => parentPort.postMessage({ latencies, failures }), 2100); });
`;

/** A TLS connection to the target; `from` a loopback address of its own (127.0.0.2, say). */
export function rawConnection(target: RunningWebhook, from?: string): Promise<TLSSocket> {
  const port = target.httpsPort;
  return new Promise((resolve, reject) => {
    const socket = connect(
      {
        // tls.connect's own options have no local address: a TCP connection made from one.
        ...(from
          ? { socket: netConnect({ host: '127.0.0.1', port, localAddress: from }) }
          : { host: '127.0.0.1', port }),
        ca: [target.ca],
        servername: 'localhost',
      },
      () => resolve(socket),
    );
    socket.on('error', reject);
  });
}

/** The sum of a metric's samples, as the target's /metrics says now. */
export async function metricValue(target: RunningWebhook, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${target.metricsPort}/metrics`)).text();
  const samples = text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'));
  return [...samples].reduce((sum, m) => sum + Number(m[1]), 0);
}

/** Milliseconds until the server closes `socket`, which the caller keeps busy or idle. */
export function closedAfter(socket: TLSSocket): Promise<{ ms: number; data: string }> {
  const started = performance.now();
  let data = '';
  socket.on('data', (b: Buffer) => (data += b.toString()));
  socket.on('error', () => undefined);
  return new Promise((resolve) =>
    socket.on('close', () => resolve({ ms: performance.now() - started, data })),
  );
}

/** Sends the request head, then one byte of it every `everyMs`, until the server hangs up. */
export async function slowHeaders(target: RunningWebhook, everyMs: number) {
  const socket = await rawConnection(target);
  const closed = closedAfter(socket);
  const head = 'POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-A: ';
  socket.write(head);
  const timer = setInterval(() => !socket.destroyed && socket.write('a'), everyMs);
  const result = await closed;
  clearInterval(timer);
  return result;
}

/** Sends a complete head declaring `length` bytes, then one byte every `everyMs`. */
export async function slowBody(target: RunningWebhook, length: number, everyMs: number) {
  const socket = await rawConnection(target);
  const closed = closedAfter(socket);
  socket.write(`POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n{`);
  const timer = setInterval(() => !socket.destroyed && socket.write(' '), everyMs);
  const result = await closed;
  clearInterval(timer);
  return result;
}

/** Declares `length` bytes, sends half of them, and hangs up: no answer is owed. */
export async function truncatedBody(target: RunningWebhook, body: string): Promise<void> {
  const socket = await rawConnection(target);
  socket.on('error', () => undefined);
  const half = body.slice(0, Math.floor(body.length / 2));
  socket.write(`POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n`);
  await new Promise<void>((resolve) => socket.write(half, () => resolve()));
  socket.destroy();
}

/** Declares a body over the limit and reads the answer without sending the body. */
export async function declaredTooLarge(target: RunningWebhook, length: number) {
  const socket = await rawConnection(target);
  const closed = closedAfter(socket);
  socket.write(`POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`);
  const { data } = await closed;
  return Number(/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 0);
}

export interface MixResult {
  requests: number;
  /** Replies by HTTP status; 0 is a connection that ended without one. */
  byStatus: Record<string, number>;
  /** Requests that got no answer, or a 5xx, that the case did not allow. */
  failed: number;
  /** Cases answered other than owed, with why (the first 20). */
  wrong: string[];
  wrongCount: number;
  peakRssMiB: number;
}

/**
 * Sends `count` cases from `next` with `concurrency` in flight over keep-alive connections,
 * judging every answer and sampling the target's memory every 100 ms.
 */
export async function runMix(
  target: RunningWebhook,
  o: { count: number; concurrency: number; next: (i: number) => FuzzCase },
): Promise<MixResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: o.concurrency });
  const result: MixResult = {
    requests: 0,
    byStatus: {},
    failed: 0,
    wrong: [],
    wrongCount: 0,
    peakRssMiB: 0,
  };
  const sample = (): void => {
    if (target.exitCode() === undefined)
      result.peakRssMiB = Math.max(result.peakRssMiB, rssMiB(target.pid));
  };
  const sampler = setInterval(sample, 100);
  let i = 0;
  const worker = async (): Promise<void> => {
    while (i < o.count) {
      const c = o.next(i++);
      const reply = await post(target, agent, c);
      result.requests++;
      result.byStatus[reply.status] = (result.byStatus[reply.status] ?? 0) + 1;
      const verdict = judge(c, reply);
      if (verdict === true) continue;
      if (reply.status === 0 || reply.status >= 500) result.failed++;
      result.wrongCount++;
      if (result.wrong.length < 20) result.wrong.push(verdict);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, worker));
  clearInterval(sampler);
  sample();
  agent.destroy();
  return result;
}
