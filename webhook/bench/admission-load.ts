// The load both servers of the webhook bench get: AdmissionReviews POSTed over keep-alive HTTPS,
// in a closed loop (saturation) or an open one (a fixed rate, latencies from the schedule).

import { Agent, request } from 'node:https';
import { performance } from 'node:perf_hooks';
import { quantile } from '@outrigger/testkit';

/** Requests outstanding at once, and the connections they share. */
export const CONCURRENCY = 32;

function send(target: { port: number }, agent: Agent, ca: string, body: string): Promise<void> {
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
export async function saturate(
  target: { port: number },
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

/** Round-trip times at a fixed rate, in ms. */
export interface Latency {
  p50: number;
  p99: number;
  /**
   * How far behind its schedule the last request was sent, in ms: more than a few ms says the
   * load generator, not the server, could not keep the rate.
   */
  behindMs?: number;
}

/** Open loop at a fixed rate: requests are due on a schedule, whatever the answers do. */
export async function fixedRate(
  target: { port: number },
  ca: string,
  bodies: string[],
  load: { rate: number; seconds: number },
): Promise<Latency> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  // Its connections opened first, as an API server's to a webhook are: a TLS handshake on the
  // clock would put connection set-up into the first requests' latency, not the server's.
  await Promise.all(
    Array.from({ length: CONCURRENCY }, (_, i) =>
      send(target, agent, ca, bodies[i % bodies.length] ?? ''),
    ),
  );
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  const total = load.rate * load.seconds;
  let sent = 0;
  let behindMs = 0;
  while (sent < total) {
    const due = Math.floor(((performance.now() - started) / 1000) * load.rate);
    for (; sent < Math.min(due, total); sent++) {
      const t0 = performance.now();
      behindMs = Math.max(behindMs, t0 - started - (sent / load.rate) * 1000);
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
  return { p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), behindMs };
}
