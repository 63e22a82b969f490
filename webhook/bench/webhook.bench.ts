// `make bench-webhook`: the standalone webhook over HTTPS keep-alive beside a bare HTTPS server
// that parses and re-serializes the same bodies, both measured in the same run, in rounds that
// alternate which goes first: throughput at saturation, latency at a fixed 1,000 requests/s,
// resident memory under load and CPU time per admission. The reviews are what an API server
// sends for a Deployment's pod (about 6 KB with its defaults and managedFields); the corpus
// pods, when ../shared/corpus is there, make a second row.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import { join } from 'node:path';
import { makeServingCert, shippedEnv } from '@outrigger/testkit';
import { rssMiB } from '../test/fuzz-harness';
import { realisticReview } from '../test/realistic-review';
import { HAVE_CORPUS, corpusPods, review } from '../test/support';
import { CONCURRENCY, fixedRate, saturate } from './admission-load';
import { pinLoadGenerator, type Pinning } from './cpu-pinning';

const ROOT = join(__dirname, '..', '..', '..');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
/** Requests whose CPU time is measured, at saturation. */
const CPU_REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 20_000);
/**
 * Requests before any phase is measured, for each server and workload: V8 is still compiling the
 * webhook's code after the first few thousand, so a short warm-up measured its tier-up, not its
 * steady state (docs/benchmarks.md, "Instructions, not seconds").
 */
const WARM_UP_REQUESTS = Number(process.env.BENCH_WARMUP_REQUESTS ?? 20_000);
const RATE = 1000;
/** Clock ticks per second of /proc/PID/stat's utime and stime (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;
// BENCH_WEBHOOK_BIN: another build's outrigger-webhook.js (a checkout of an earlier commit, say)
// to measure in place of this one. BENCH_NODE_OPTIONS: the webhook's NODE_OPTIONS in place of
// the chart's (to try V8 settings).

interface Target {
  name: string;
  child: ChildProcess;
  pid: number;
  port: number;
}

interface Workload {
  name: string;
  bodies: string[];
}

function realisticBodies(): Workload {
  const bodies = Array.from({ length: 64 }, (_, i) =>
    JSON.stringify(realisticReview(`bench-${i}`, i)),
  );
  return { name: 'realistic', bodies };
}

function corpusBodies(): Workload | undefined {
  if (!HAVE_CORPUS) return undefined;
  return { name: 'corpus', bodies: corpusPods().map(({ pod }) => review(pod)) };
}

const average = (bodies: string[]): number =>
  bodies.reduce((n, b) => n + Buffer.byteLength(b), 0) / bodies.length;

function start(server: Server, pinning: Pinning): Promise<Target> {
  const { name, env } = server;
  const [command = '', ...args] = pinning.command([process.execPath, ...server.args]);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  return new Promise((resolve, reject) => {
    let out = '';
    let started = false;
    const onData = (c: Buffer): void => {
      if (started) return; // the rest of the log is not kept
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"https"'));
      if (!line) return;
      started = true;
      const port = (JSON.parse(line) as { https: number }).https;
      resolve({ name, child, pid: child.pid ?? 0, port });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${out.trim()}`)));
  });
}

function stop(target: Target): Promise<void> {
  return new Promise((resolve) => {
    target.child.once('exit', () => resolve());
    target.child.kill('SIGTERM');
  });
}

/** User plus system CPU time the process has used, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

/** The highest RSS of the process while `work` runs, sampled every 100 ms. */
async function peakRss<T>(pid: number, work: Promise<T>): Promise<{ value: T; peak: number }> {
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 100);
  try {
    const value = await work;
    return { value, peak: Math.max(peak, rssMiB(pid)) };
  } finally {
    clearInterval(timer);
  }
}

interface Result {
  throughput: number;
  /** CPU seconds of the server per second of the throughput phase (1: one core, all of it). */
  busy: number;
  p50: number;
  p99: number;
  /** CPU time of the server per request, in µs. */
  cpuMicros: number;
  /** Peak RSS while loaded, in MiB. */
  rss: number;
}

async function measure(target: Target, ca: string, work: Workload): Promise<Result> {
  const { bodies } = work;
  await saturate(target, ca, bodies, { count: WARM_UP_REQUESTS });
  // The server's CPU over the throughput phase too: the host's speed changes between phases, so
  // only this says whether a server was busy the whole phase or waited.
  const [cpuBefore, wallBefore] = [cpuSeconds(target.pid), performance.now()];
  const loaded = await peakRss(target.pid, saturate(target, ca, bodies, { seconds: SECONDS }));
  const busy = (cpuSeconds(target.pid) - cpuBefore) / ((performance.now() - wallBefore) / 1000);
  const { p50, p99 } = await fixedRate(target, ca, bodies, { rate: RATE, seconds: SECONDS });
  const before = cpuSeconds(target.pid);
  const cpu = await peakRss(target.pid, saturate(target, ca, bodies, { count: CPU_REQUESTS }));
  const cpuMicros = ((cpuSeconds(target.pid) - before) / CPU_REQUESTS) * 1e6;
  return {
    throughput: loaded.value,
    busy,
    p50,
    p99,
    cpuMicros,
    rss: Math.max(loaded.peak, cpu.peak),
  };
}

interface Server {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

function webhookEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env, ...shippedEnv('webhook') };
  const tried = process.env.BENCH_NODE_OPTIONS;
  return tried === undefined ? env : { ...env, NODE_OPTIONS: tried };
}

/** The two servers: the bare one with Node's defaults, the webhook as the chart starts it. */
function servers(): { ca: string; list: Server[] } {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-bench-'));
  const made = makeServingCert({ dir, name: 'bench' });
  const [cert, key, ca] = [made.certFile, made.keyFile, made.caPem];
  // prettier-ignore
  const webhookArgs = [
    process.env.BENCH_WEBHOOK_BIN ?? join(ROOT, 'webhook', 'bin', 'outrigger-webhook.js'),
    '--listen', '127.0.0.1:0',
    '--metrics-listen', '127.0.0.1:0',
    '--tls-cert-file', cert,
    '--tls-key-file', key,
    '--log-level', 'info',
    '--shutdown-delay-seconds', '0',
  ];
  const list = [
    { name: 'bare', args: [join(__dirname, 'bare-server.js'), cert, key], env: process.env },
    { name: 'webhook', args: webhookArgs, env: webhookEnv() },
  ];
  return { ca, list };
}

/** A server's figures in one round: at start, then per workload. */
interface Measured {
  startRss: number;
  byWorkload: Map<string, Result>;
}

async function runServer(
  server: Server,
  ca: string,
  workloads: Workload[],
  pinning: Pinning,
): Promise<Measured> {
  const target = await start(server, pinning);
  try {
    await new Promise((r) => setTimeout(r, 500)); // settled after its start
    const startRss = rssMiB(target.pid);
    const byWorkload = new Map<string, Result>();
    for (const w of workloads) byWorkload.set(w.name, await measure(target, ca, w));
    return { startRss, byWorkload };
  } finally {
    await stop(target);
  }
}

async function main(): Promise<void> {
  const pinning = pinLoadGenerator();
  const { ca, list } = servers();
  const workloads = [realisticBodies()];
  const corpus = corpusBodies();
  if (corpus) workloads.push(corpus);
  console.log(
    `bench-webhook: Node ${process.version}, ${CONCURRENCY} keep-alive connections, ${ROUNDS} rounds, ${WARM_UP_REQUESTS} requests of warm-up, ${SECONDS} s per phase, CPU over ${CPU_REQUESTS} requests`,
  );
  console.log(`CPUs: ${pinning.description}`);
  console.log(`webhook environment (from manifests/install.yaml): ${envLine(list[1]?.env ?? {})}`);
  for (const w of workloads)
    console.log(
      `workload ${w.name}: ${w.bodies.length} reviews, ${average(w.bodies).toFixed(0)} bytes on average`,
    );
  if (!corpus)
    console.log('workload corpus: skipped, ../shared/corpus is not beside the repository');
  const rounds: Map<string, Measured>[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = i % 2 === 0 ? list : [...list].reverse();
    console.error(`round ${i + 1}: ${order.map((s) => s.name).join(', then ')}`);
    const round = new Map<string, Measured>();
    for (const s of order) round.set(s.name, await runServer(s, ca, workloads, pinning));
    rounds.push(round);
  }
  report(rounds, workloads);
}

function envLine(env: NodeJS.ProcessEnv): string {
  const names = [
    'NODE_OPTIONS',
    'MALLOC_ARENA_MAX',
    'MALLOC_MMAP_THRESHOLD_',
    'MALLOC_TRIM_THRESHOLD_',
  ];
  return names.map((n) => `${n}=${env[n] ?? ''}`).join(' ');
}

const fmt = (n: number, d = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  if (sorted.length % 2) return sorted[mid] ?? NaN;
  return ((sorted[mid - 1] ?? NaN) + (sorted[mid] ?? NaN)) / 2;
}

/** Median, and the range of the rounds. */
function spread(values: number[], d = 0, unit = ''): string {
  const low = Math.min(...values);
  const high = Math.max(...values);
  return `${fmt(median(values), d)}${unit} (${fmt(low, d)}–${fmt(high, d)})`;
}

function report(rounds: Map<string, Measured>[], workloads: Workload[]): void {
  const get = (r: Map<string, Measured>, s: string, w: string): Result | undefined =>
    r.get(s)?.byWorkload.get(w);
  console.log(
    "\nEach round: throughput (and the server's CPU over that phase, in % of one core), p50 / p99 at 1,000 req/s, CPU per request, RSS at start → peak under load",
  );
  console.log('| round | workload | bare | webhook | throughput ratio | RSS ratio (peak) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  rounds.forEach((round, i) => {
    for (const w of workloads) {
      const cell = (s: string): string => {
        const r = get(round, s, w.name);
        if (!r) return '';
        return `${fmt(r.throughput)} req/s (busy ${fmt(r.busy * 100)} %), ${fmt(r.p50, 2)} / ${fmt(r.p99, 2)} ms, ${fmt(r.cpuMicros)} µs, ${fmt(round.get(s)?.startRss ?? NaN)} → ${fmt(r.rss)} MiB`;
      };
      const [b, h] = [get(round, 'bare', w.name), get(round, 'webhook', w.name)];
      const ratio = b && h ? `${(h.throughput / b.throughput).toFixed(2)}x` : '';
      const rss = b && h ? `${(h.rss / b.rss).toFixed(2)}x` : '';
      const first = i % 2 === 0 ? 'bare first' : 'webhook first';
      console.log(
        `| ${i + 1} (${first}) | ${w.name} | ${cell('bare')} | ${cell('webhook')} | ${ratio} | ${rss} |`,
      );
    }
  });
  for (const w of workloads) summary(rounds, w.name);
}

/** Median and range over the rounds, and the targets docs/benchmarks.md states. */
function summary(rounds: Map<string, Measured>[], workload: string): void {
  const all = (s: string, f: (r: Result) => number): number[] =>
    rounds.flatMap((r) => {
      const x = r.get(s)?.byWorkload.get(workload);
      return x ? [f(x)] : [];
    });
  const ratios = (f: (r: Result) => number): number[] =>
    rounds.flatMap((r) => {
      const [b, h] = [
        r.get('bare')?.byWorkload.get(workload),
        r.get('webhook')?.byWorkload.get(workload),
      ];
      return b && h ? [f(h) / f(b)] : [];
    });
  console.log(`\n${workload}: median (range) over ${rounds.length} rounds`);
  for (const s of ['bare', 'webhook']) {
    const starts = rounds.map((r) => r.get(s)?.startRss ?? NaN);
    console.log(
      `  ${s.padEnd(7)} throughput ${spread(
        all(s, (r) => r.throughput),
        0,
        ' req/s',
      )} (busy ${spread(
        all(s, (r) => r.busy * 100),
        0,
        ' %',
      )}), p50 ${spread(
        all(s, (r) => r.p50),
        2,
        ' ms',
      )}, p99 ${spread(
        all(s, (r) => r.p99),
        2,
        ' ms',
      )}, CPU ${spread(
        all(s, (r) => r.cpuMicros),
        0,
        ' µs',
      )}/request, RSS at start ${spread(starts, 0, ' MiB')}, peak ${spread(
        all(s, (r) => r.rss),
        0,
        ' MiB',
      )}`,
    );
  }
  const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
  const tput = ratios((r) => r.throughput);
  const rss = ratios((r) => r.rss);
  const p99 = all('webhook', (r) => r.p99);
  console.log(
    `  throughput ratio webhook/bare ${spread(tput, 2, 'x')}: target >= 0.8x ${verdict(median(tput) >= 0.8)}`,
  );
  console.log(
    `  RSS ratio webhook/bare (peak) ${spread(rss, 2, 'x')}: target <= 1.3x ${verdict(median(rss) <= 1.3)}`,
  );
  console.log(
    `  webhook p99 at ${RATE} req/s ${spread(p99, 2, ' ms')}: target <= 2 ms ${verdict(median(p99) <= 2)}`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
