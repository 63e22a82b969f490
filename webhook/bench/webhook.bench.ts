// `make bench-webhook`: the standalone webhook over HTTPS keep-alive, fed AdmissionReviews of
// the corpus pods, beside a bare HTTPS server that parses and re-serializes the same bodies,
// both measured in this run: throughput at saturation, latency at a fixed 1,000 requests/s,
// and resident memory over 100,000 requests.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseAllDocuments } from 'yaml';
import { TEMPLATE_PATHS, isRecord } from '@outrigger/shared';
import { makeCert } from '../test/support';

const ROOT = join(__dirname, '..', '..', '..');
const CORPUS = join(ROOT, '..', 'shared', 'corpus');
const SATURATION_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RATE = 1000;
const RATE_SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const MEMORY_REQUESTS = Number(process.env.BENCH_MEMORY_REQUESTS ?? 100_000);
const CONCURRENCY = 32;

interface Target {
  name: string;
  child: ChildProcess;
  port: number;
}

function corpusBodies(): string[] {
  const bodies: string[] = [];
  const visit = (value: unknown): void => {
    if (!isRecord(value)) return;
    if (Array.isArray(value.items)) return value.items.forEach(visit);
    const path = TEMPLATE_PATHS[String(value.kind)];
    const template = path?.reduce<unknown>((o, k) => (isRecord(o) ? o[k] : undefined), value);
    if (!isRecord(template)) return;
    const request = {
      uid: `bench-${bodies.length}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      operation: 'CREATE',
      namespace: 'bench',
      object: template,
    };
    bodies.push(
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request }),
    );
  };
  const files = ['istio', 'linkerd'].flatMap((dir) =>
    readdirSync(join(CORPUS, dir)).map((f) => join(CORPUS, dir, f)),
  );
  const docs = files.flatMap((f) => parseAllDocuments(readFileSync(f, 'utf8')));
  for (const doc of docs) if (doc.errors.length === 0) visit(doc.toJS());
  return bodies;
}

function start(name: string, args: string[]): Promise<Target> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let out = '';
    const onData = (c: Buffer): void => {
      out += c.toString();
      const line = out.split('\n').find((l) => l.includes('"https"'));
      if (line) resolve({ name, child, port: (JSON.parse(line) as { https: number }).https });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`${name} exited with ${code}: ${out}`)));
  });
}

function rssMiB(pid: number | undefined): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

function send(target: Target, agent: Agent, ca: string, body: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        path: '/mutate/pods',
        method: 'POST',
        agent,
        ca,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`status ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Closed loop, CONCURRENCY requests outstanding, until `count` or `seconds` runs out. */
async function saturate(
  target: Target,
  ca: string,
  bodies: string[],
  limit: { count?: number; seconds?: number },
): Promise<number> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let sent = 0;
  const end = performance.now() + (limit.seconds ?? Infinity) * 1000;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (sent < (limit.count ?? Infinity) && performance.now() < end) {
      const body = bodies[sent++ % bodies.length] ?? '';
      await send(target, agent, ca, body);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  agent.destroy();
  return sent / ((performance.now() - started) / 1000);
}

/** Open loop at a fixed rate: requests are due on a schedule, whatever the answers do. */
async function fixedRate(
  target: Target,
  ca: string,
  bodies: string[],
): Promise<{ p50: number; p99: number; sent: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  let sent = 0;
  while (sent < RATE * RATE_SECONDS) {
    const due = Math.floor(((performance.now() - started) / 1000) * RATE);
    for (; sent < Math.min(due, RATE * RATE_SECONDS); sent++) {
      const t0 = performance.now();
      inFlight.push(
        send(target, agent, ca, bodies[sent % bodies.length] ?? '').then(
          () => void latencies.push(performance.now() - t0),
        ),
      );
    }
    // Sleep between batches rather than spin: the load shares the two cores with the server.
    await new Promise((r) => setTimeout(r, 1));
  }
  await Promise.all(inFlight);
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const at = (q: number): number =>
    latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), sent };
}

interface Result {
  throughput: number;
  p50: number;
  p99: number;
  rss: number[];
}

async function measure(target: Target, ca: string, bodies: string[]): Promise<Result> {
  console.error(`measuring ${target.name}...`);
  await saturate(target, ca, bodies, { count: 2000 }); // warm-up
  const rss = [rssMiB(target.child.pid)];
  const throughput = await saturate(target, ca, bodies, { seconds: SATURATION_SECONDS });
  const { p50, p99 } = await fixedRate(target, ca, bodies);
  for (let i = 0; i < 4; i++) {
    await saturate(target, ca, bodies, { count: MEMORY_REQUESTS / 4 });
    rss.push(rssMiB(target.child.pid));
  }
  return { throughput, p50, p99, rss };
}

async function main(): Promise<void> {
  const {
    cert,
    key,
    certPem: ca,
  } = makeCert(mkdtempSync(join(tmpdir(), 'outrigger-bench-')), 'bench');
  const bodies = corpusBodies();
  const webhookBin = join(ROOT, 'webhook', 'bin', 'outrigger-webhook.js');
  const bareJs = join(__dirname, 'bare-server.js');
  const webhookArgs = [
    webhookBin,
    '--listen',
    '127.0.0.1:0',
    '--metrics-listen',
    '127.0.0.1:0',
    '--tls-cert-file',
    cert,
    '--tls-key-file',
    key,
    '--log-level',
    'info',
    '--shutdown-delay-seconds',
    '0',
  ];
  console.log(
    `bench-webhook: ${bodies.length} AdmissionReviews of corpus pods, ${CONCURRENCY} keep-alive connections, Node ${process.version}\n`,
  );
  const results: [string, Result][] = [];
  for (const [name, args] of [
    ['bare HTTPS server (parse + stringify)', [bareJs, cert, key]],
    ['outrigger-webhook (standalone)', webhookArgs],
  ] as const) {
    const target = await start(name, [...args]);
    results.push([name, await measure(target, ca, bodies)]);
    target.child.kill('SIGTERM');
  }
  report(results);
}

function report(results: [string, Result][]): void {
  const fmt = (n: number, d = 0): string => n.toFixed(d);
  console.log(
    '| server | throughput at saturation | p50 at 1,000 req/s | p99 at 1,000 req/s | RSS at 0 / 25k / 50k / 75k / 100k requests |',
  );
  console.log('| --- | --- | --- | --- | --- |');
  for (const [name, r] of results) {
    console.log(
      `| ${name} | ${fmt(r.throughput)} req/s | ${fmt(r.p50, 2)} ms | ${fmt(r.p99, 2)} ms | ${r.rss.map((m) => fmt(m, 0)).join(' / ')} MiB |`,
    );
  }
  const [bare, hook] = [results[0]?.[1], results[1]?.[1]];
  if (!bare || !hook) return;
  const ratio = hook.throughput / bare.throughput;
  const growth = (hook.rss[4] ?? 0) - (hook.rss[2] ?? 0);
  console.log(
    `\nthroughput ratio webhook/bare: ${ratio.toFixed(2)}x (target >= 0.7x: ${ratio >= 0.7 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `webhook p99 at ${RATE} req/s: ${hook.p99.toFixed(2)} ms (target <= 5 ms: ${hook.p99 <= 5 ? 'met' : 'NOT met'})`,
  );
  console.log(
    `webhook RSS over the second 50,000 requests: ${growth >= 0 ? '+' : ''}${growth.toFixed(1)} MiB`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
