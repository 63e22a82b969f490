// One GET to a readiness URL (http or https, with a CA to trust), answering with the status code.

import * as http from 'node:http';
import * as https from 'node:https';

export interface ProbeOptions {
  /** PEM of the CA that signed the server's certificate (https). */
  ca?: string;
  /** Accept any server certificate (https). */
  insecure?: boolean;
  timeoutMs?: number;
}

export interface ProbeResult {
  status: number;
  body: string;
}

/** GETs `url`; rejects on connection errors and after `timeoutMs` (default 2 s). */
export function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResult> {
  const target = new URL(url);
  const get = target.protocol === 'https:' ? https.get : http.get;
  const tls =
    target.protocol === 'https:' ? { ca: options.ca, rejectUnauthorized: !options.insecure } : {};
  return new Promise((resolve, reject) => {
    const request = get(
      target,
      { ...tls, timeout: options.timeoutMs ?? 2_000, agent: false },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`GET ${url}: no answer in time`)));
    request.on('error', reject);
  });
}
