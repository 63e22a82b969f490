// The servers the webhook benches start: the bare HTTPS server (bare-server.ts) and its floor
// with Node's defaults, and the standalone webhook with the environment the chart gives its
// container, each a child process on 127.0.0.1 with one throwaway certificate, placed by the
// bench's pinning.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeServingCert, shippedEnv, sidecarSetsYaml } from '@outrigger/testkit';
import type { Pinning } from './cpu-pinning';

const ROOT = join(__dirname, '..', '..', '..');
/** Clock ticks per second of /proc/PID/stat's utime and stime (USER_HZ, 100 on Linux). */
const CLOCK_TICKS = 100;

export interface Server {
  name: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

export interface Target {
  name: string;
  child: ChildProcess;
  pid: number;
  port: number;
}

/** The chart's environment, or BENCH_NODE_OPTIONS in place of its NODE_OPTIONS. */
export function webhookEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env, ...shippedEnv('webhook') };
  const tried = process.env.BENCH_NODE_OPTIONS;
  return tried === undefined ? env : { ...env, NODE_OPTIONS: tried };
}

/** Where the servers' certificate is, and the CA that trusts it. */
export interface Certificate {
  cert: string;
  key: string;
  ca: string;
}

export function benchCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-bench-'));
  const made = makeServingCert({ dir, name: 'bench' });
  return { cert: made.certFile, key: made.keyFile, ca: made.caPem };
}

/** The bare server; `script` another one in its place. */
export function bareServer(certificate: Certificate, name = 'bare', script?: string): Server {
  const path = script ?? join(__dirname, 'bare-server.js');
  return { name, args: [path, certificate.cert, certificate.key], env: process.env };
}

/** The bare server answering `{}` without parsing: the latency no server's work is in. */
export function floorServer(certificate: Certificate): Server {
  const bare = bareServer(certificate, 'floor');
  return { ...bare, args: [...bare.args, 'floor'] };
}

/**
 * The standalone webhook as the chart starts it; `bin` another build's outrigger-webhook.js
 * (BENCH_WEBHOOK_BIN by default: a checkout of an earlier commit, say).
 */
export function webhookServer(certificate: Certificate, name = 'webhook', bin?: string): Server {
  // prettier-ignore
  const args = [
    bin ?? process.env.BENCH_WEBHOOK_BIN ?? join(ROOT, 'webhook', 'bin', 'outrigger-webhook.js'),
    '--listen', '127.0.0.1:0',
    '--metrics-listen', '127.0.0.1:0',
    '--tls-cert-file', certificate.cert,
    '--tls-key-file', certificate.key,
    '--log-level', 'info',
    '--shutdown-delay-seconds', '0',
  ];
  return { name, args, env: webhookEnv() };
}

/**
 * The standalone webhook configured with `total` sidecar sets, the proxy's among them, of which
 * `matching` select every pod (sidecarSetsYaml).
 */
export function webhookWithSets(certificate: Certificate, total: number, matching: number): Server {
  const file = join(mkdtempSync(join(tmpdir(), 'outrigger-bench-sets-')), 'config.yaml');
  writeFileSync(file, sidecarSetsYaml(total, matching));
  const base = webhookServer(certificate, `webhook, ${total} sets (${matching} matching)`);
  return { ...base, args: [...base.args, '--config-file', file] };
}

/** Starts a server where the pinning puts servers; resolves once it says where it listens. */
export function start(server: Server, pinning: Pinning): Promise<Target> {
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

export function stop(target: Target): Promise<void> {
  return new Promise((resolve) => {
    if (target.child.exitCode !== null || target.child.signalCode !== null) return resolve();
    target.child.once('exit', () => resolve());
    target.child.kill('SIGTERM');
  });
}

/** User plus system CPU time the process has used, in seconds. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name, which is in parentheses and may hold spaces.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
