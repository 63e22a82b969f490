// SIGTERM under traffic, on the real binary: readiness goes false first, requests keep being
// answered during the shutdown delay and those in flight finish; none fails; exit code 0.

import { spawn, type ChildProcess } from 'node:child_process';
import { get } from 'node:http';
import { Agent } from 'node:https';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import { admissionReview, makeServingCert, waitFor, type ServingCert } from '@outrigger/testkit';
import { post } from './support';

jest.setTimeout(60_000);

const BIN = join(__dirname, '..', 'bin', 'outrigger-webhook.js');

interface Started {
  child: ChildProcess;
  httpsPort: number;
  metricsPort: number;
  exited: Promise<number | null>;
}

function start(args: string[]): Promise<Started> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let buffer = '';
    const timer = setTimeout(() => reject(new Error(`webhook did not start:\n${buffer}`)), 20_000);
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString();
      for (const line of buffer.split('\n')) {
        if (!line.includes('outrigger-webhook serving')) continue;
        const entry = JSON.parse(line) as { https: number; metrics: number };
        clearTimeout(timer);
        resolve({ child, httpsPort: entry.https, metricsPort: entry.metrics, exited });
      }
    };
    child.stderr?.on('data', onData);
    child.stdout?.on('data', onData);
    child.on('exit', (code) => reject(new Error(`webhook exited with ${code}:\n${buffer}`)));
  });
}

const readyStatus = (port: number): Promise<number> =>
  new Promise((resolve) => {
    get({ host: '127.0.0.1', port, path: '/readyz' }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });

/** The standalone webhook on free loopback ports, with a throwaway certificate. */
async function startStandalone(
  shutdownDelaySeconds: number,
): Promise<{ cert: ServingCert; w: Started }> {
  const cert = makeServingCert();
  const ports = ['--listen', '127.0.0.1:0', '--metrics-listen', '127.0.0.1:0'];
  const tls = ['--tls-cert-file', cert.certFile, '--tls-key-file', cert.keyFile];
  const w = await start([
    ...ports,
    ...tls,
    '--shutdown-delay-seconds',
    String(shutdownDelaySeconds),
  ]);
  return { cert, w };
}

it('drains on SIGTERM under traffic without a failed request', async () => {
  const { cert, w } = await startStandalone(1);
  expect(await readyStatus(w.metricsPort)).toBe(200);
  const agent = new Agent({ keepAlive: true, maxSockets: 8 });
  let stop = false;
  let ok = 0;
  const failures: string[] = [];
  const body = admissionReview({
    metadata: { labels: { app: 'a' } },
    spec: { containers: [{ name: 'a' }] },
  });
  const worker = async (): Promise<void> => {
    while (!stop) {
      try {
        const reply = await post(w.httpsPort, '/mutate/pods', body, { agent, ca: [cert.caPem] });
        if (reply.status === 200) ok++;
        else failures.push(`status ${reply.status}`);
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
  };
  const workers = Array.from({ length: 8 }, () => worker());
  // Under traffic: SIGTERM once the webhook has answered a good number of requests.
  await waitFor('20 answered requests before SIGTERM', () => ok > 20, { timeoutMs: 10_000 });
  const before = ok;
  w.child.kill('SIGTERM');
  // A load balancer stops sending once readiness fails; so does this load.
  await waitFor(
    'readiness to fail after SIGTERM',
    async () => (await readyStatus(w.metricsPort)) !== 200,
    { timeoutMs: 10_000, intervalMs: 20 },
  );
  stop = true;
  await Promise.all(workers);
  agent.destroy();
  expect(failures).toEqual([]);
  expect(ok).toBeGreaterThan(before);
  expect(await w.exited).toBe(0);
});

it('exits at once on SIGTERM while a client holds a connection it never used', async () => {
  const { cert, w } = await startStandalone(0);
  const agent = new Agent({ keepAlive: true });
  const body = admissionReview({ metadata: {}, spec: { containers: [{ name: 'a' }] } });
  const used = await post(w.httpsPort, '/mutate/pods', body, { agent, ca: [cert.caPem] });
  expect(used.status).toBe(200);
  // The API server's HTTP client dials connections ahead of need and keeps the spares: TLS is
  // set up, no request is ever sent. Node counts such a connection active, not idle.
  const spare = await new Promise<TLSSocket>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port: w.httpsPort, ca: [cert.caPem] }, () =>
      resolve(socket),
    );
    socket.once('error', reject);
  });
  spare.on('error', () => undefined);
  const spareClosed = new Promise((resolve) => spare.once('close', resolve));
  const sigterm = Date.now();
  w.child.kill('SIGTERM');
  expect(await w.exited).toBe(0);
  await spareClosed;
  // Not the drain deadline (25 s): neither connection carries a request.
  expect(Date.now() - sigterm).toBeLessThan(5_000);
  agent.destroy();
});

it('refuses bad flags with the fix, and exits 2', async () => {
  const child = spawn(process.execPath, [BIN, '--listen', 'nowhere'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  expect(code).toBe(2);
  expect(err).toMatch(/--listen must be HOST:PORT or :PORT/);
});
