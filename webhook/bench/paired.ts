// Two servers measured at once: both on the CPU the pinning gives servers, both loaded at
// saturation at the same time (each over its own connections), each one's CPU time per request
// read from /proc. A shared machine's speed changes from one second to the next (the bare
// server alone measured 5,490 to 9,302 requests a second across the rounds of one run); two
// servers measured at once see the same machine, so the ratio of their CPU times holds where
// separate phases swing (docs/benchmarks.md, Webhook, "Two servers at once"). At saturation a
// server's throughput is the inverse of its CPU time per request, so the ratio is the throughput
// ratio.
//
// `make bench-webhook` runs it for the bare server and the webhook. On its own, to compare two
// builds: `node webhook/dist/bench/paired.js SPEC SPEC`, where a SPEC is `bare`, `webhook`,
// `bare=SCRIPT`, `webhook=BIN` (another build's outrigger-webhook.js) or `webhook-sets=T/M` (the
// webhook with T sidecar sets, M of them matching every pod); `bare webhook` without.

import { CORPUS_DIR, median } from '@outrigger/testkit';
import {
  bareServer,
  benchCertificate,
  cpuSeconds,
  start,
  stop,
  webhookServer,
  webhookWithSets,
  type Server,
  type Target,
} from './bench-servers';
import { saturate } from './admission-load';
import { pinLoadGenerator, type Pinning } from './cpu-pinning';
import { corpusBodies, realisticBodies } from './workloads';

export interface PairedOptions {
  rounds: number;
  /** Requests each server answers in a round. */
  requests: number;
  /** Requests each server answers before the first round. */
  warmUp: number;
}

/** Each server's CPU time per request, in µs, round by round. */
export type Paired = [number[], number[]];

export async function measurePaired(
  targets: [Target, Target],
  ca: string,
  bodies: string[],
  options: PairedOptions,
): Promise<Paired> {
  await Promise.all(targets.map((t) => saturate(t, ca, bodies, { count: options.warmUp })));
  const micros: Paired = [[], []];
  for (let round = 0; round < options.rounds; round++) {
    const before = targets.map((t) => cpuSeconds(t.pid));
    // Which server's load starts first alternates: the first gets a head start of its
    // connections' first requests.
    const order = round % 2 === 0 ? targets : [...targets].reverse();
    await Promise.all(order.map((t) => saturate(t, ca, bodies, { count: options.requests })));
    targets.forEach((t, i) => {
      const seconds = cpuSeconds(t.pid) - (before[i] ?? NaN);
      micros[i]?.push((seconds / options.requests) * 1e6);
    });
  }
  return micros;
}

/** What servers measured at once run on. */
export interface PairedRun {
  ca: string;
  bodies: string[];
  pinning: Pinning;
  options: PairedOptions;
}

/** Starts two servers where the pinning puts servers, measures them at once, and stops them. */
export async function pairedServers(
  servers: readonly Server[],
  run: PairedRun,
): Promise<{ names: [string, string]; micros: Paired }> {
  const targets: Target[] = [];
  try {
    for (const s of servers) targets.push(await start(s, run.pinning));
    const [first, second] = targets;
    if (!first || !second) throw new Error('a server did not start');
    const micros = await measurePaired([first, second], run.ca, run.bodies, run.options);
    return { names: [first.name, second.name], micros };
  } finally {
    await Promise.all(targets.map(stop));
  }
}

/** The second server's CPU a request over the first's, round by round. */
const cpuRatios = ([first, second]: Paired): number[] =>
  first.map((a, i) => (second[i] ?? NaN) / a);

/** The second server's throughput over the first's: the inverse of the median CPU ratio. */
export const throughputRatio = (micros: Paired): number => 1 / median(cpuRatios(micros));

/** Lines that say what was measured: each server's µs a request, and the second / first. */
export function pairedReport(names: [string, string], micros: Paired): string[] {
  const ratios = cpuRatios(micros);
  const range = (xs: number[], d: number): string =>
    `${median(xs).toFixed(d)} (${Math.min(...xs).toFixed(d)}–${Math.max(...xs).toFixed(d)})`;
  const rounds = (xs: number[]): string => xs.map((x) => x.toFixed(0)).join(' ');
  return [
    ...names.map(
      (n, i) =>
        `  ${n}: CPU ${range(micros[i] ?? [], 0)} µs a request (rounds: ${rounds(micros[i] ?? [])})`,
    ),
    `  ${names[1]} / ${names[0]} CPU a request: ${range(ratios, 3)}; throughput ratio ${names[1]}/${names[0]} (its inverse): ${throughputRatio(micros).toFixed(2)}x`,
  ];
}

/**
 * The realistic reviews; BENCH_OWNERS=N: N reviews, each a pod of a Deployment of its own;
 * BENCH_CORPUS=1: the corpus pods' reviews.
 */
function workload(): string[] {
  if (process.env.BENCH_CORPUS === '1') {
    const corpus = corpusBodies();
    if (!corpus) throw new Error(`BENCH_CORPUS=1, but the corpus folder ${CORPUS_DIR} is absent`);
    return corpus.bodies;
  }
  const owners = Number(process.env.BENCH_OWNERS ?? 0);
  return realisticBodies(owners > 0 ? { count: owners, owners: true } : {}).bodies;
}

function serverOf(
  spec: string,
  index: number,
  certificate: ReturnType<typeof benchCertificate>,
): Server {
  const [kind, path] = spec.split('=', 2);
  const name = `${spec} (${index + 1})`;
  if (kind === 'bare') return bareServer(certificate, name, path);
  if (kind === 'webhook') return webhookServer(certificate, name, path);
  const sets = kind === 'webhook-sets' ? /^(\d+)\/(\d+)$/.exec(path ?? '') : null;
  if (sets) return webhookWithSets(certificate, Number(sets[1]), Number(sets[2]));
  throw new Error(
    `a server is bare, webhook, bare=SCRIPT, webhook=BIN or webhook-sets=TOTAL/MATCHING; got ${spec}`,
  );
}

async function main(): Promise<void> {
  const specs = process.argv.slice(2);
  const [a = 'bare', b = 'webhook'] = specs.length > 0 ? specs : [];
  const pinning = pinLoadGenerator();
  const certificate = benchCertificate();
  const options = {
    rounds: Number(process.env.BENCH_ROUNDS ?? 6),
    requests: Number(process.env.BENCH_CPU_REQUESTS ?? 10_000),
    warmUp: Number(process.env.BENCH_WARMUP_REQUESTS ?? 20_000),
  };
  console.log(
    `paired: Node ${process.version}, ${options.rounds} rounds of ${options.requests} requests each (BENCH_CORPUS, BENCH_OWNERS: which), at once, after ${options.warmUp} of warm-up; CPUs: ${pinning.description}`,
  );
  const servers = [serverOf(a, 0, certificate), serverOf(b, 1, certificate)];
  const run = { ca: certificate.ca, bodies: workload(), pinning, options };
  const { names, micros } = await pairedServers(servers, run);
  for (const line of pairedReport(names, micros)) console.log(line);
}

if (require.main === module)
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
