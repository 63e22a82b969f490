// Start-up in any order, on the real binary: a webhook started before its certificate exists
// stays alive, live but not ready, says what it waits for, and serves once the files appear.

import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { admissionReview, makeServingCert } from '@outrigger/testkit';
import { post } from './support';

jest.setTimeout(60_000);

const BIN = join(__dirname, '..', 'bin', 'outrigger-webhook.js');

const status = (port: number, path: string): Promise<number> =>
  new Promise((resolve) => {
    get({ host: '127.0.0.1', port, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', () => resolve(0));
  });

/** Resolves with the first log entry whose message contains `text`. */
function logEntry(
  lines: string[],
  text: string,
  exited: () => boolean,
): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const timer = setInterval(() => {
      const line = lines.find((l) => l.includes(text));
      if (line) {
        clearInterval(timer);
        resolve(JSON.parse(line) as Record<string, unknown>);
      } else if (exited()) {
        clearInterval(timer);
        reject(new Error(`the webhook exited before logging "${text}":\n${lines.join('\n')}`));
      }
    }, 50);
  });
}

it('waits for its certificate files, live and not ready, then serves', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'outrigger-startup-'));
  const certFile = join(dir, 'tls.crt');
  const keyFile = join(dir, 'tls.key');
  // prettier-ignore
  const child = spawn(process.execPath, [
    BIN,
    '--listen', '127.0.0.1:0',
    '--metrics-listen', '127.0.0.1:0',
    '--tls-cert-file', certFile,
    '--tls-key-file', keyFile,
    '--shutdown-delay-seconds', '0',
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  let exited = false;
  const ended = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      exited = true;
      resolve(code);
    }),
  );
  const lines: string[] = [];
  const collect = (chunk: Buffer): void => {
    lines.push(
      ...chunk
        .toString()
        .split('\n')
        .filter((l) => l.startsWith('{')),
    );
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  try {
    const probes = await logEntry(lines, 'probes and metrics', () => exited);
    const metricsPort = Number(probes.port);
    const waiting = await logEntry(lines, 'waiting for the serving certificate', () => exited);
    expect(String(waiting.message)).toContain(certFile);
    expect(await status(metricsPort, '/healthz')).toBe(200);
    expect(await status(metricsPort, '/readyz')).toBe(503);

    const cert = makeServingCert({ dir, name: 'made-later' });
    copyFileSync(cert.keyFile, keyFile);
    copyFileSync(cert.certFile, certFile);
    const serving = await logEntry(lines, 'outrigger-webhook serving', () => exited);
    expect(await status(metricsPort, '/readyz')).toBe(200);
    const reply = await post(Number(serving.https), '/mutate/pods', admissionReview({ spec: {} }), {
      ca: [cert.caPem],
    });
    expect(reply.status).toBe(200);
  } finally {
    child.kill('SIGTERM');
    expect(await ended).toBe(0);
  }
});
