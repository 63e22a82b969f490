// Whether the webhook answers its readiness probe, asked only when there are escaped pods to
// heal (a steady cluster makes no probe calls). A heal while the webhook is down would make pods
// that escape as well and spend the owner's one heal of the revision, so heals wait for it.

import { get as httpGet } from 'node:http';
import { get as httpsGet } from 'node:https';

export const PROBE_TIMEOUT_MS = 1000;

/** Resolves true on a 2xx answer within the timeout, false on anything else; never rejects. */
export function probeReady(url: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  return new Promise((resolve) => {
    const https = url.startsWith('https:');
    // Only the status of a readiness URL is read, and nothing is sent: an unverified TLS
    // connection cannot leak anything, and the webhook's CA may not be this process's to know.
    const options = { timeout: timeoutMs, ...(https ? { rejectUnauthorized: false } : {}) };
    const request = (https ? httpsGet : httpGet)(url, options, (response) => {
      response.resume();
      const code = response.statusCode ?? 0;
      resolve(code >= 200 && code < 300);
    });
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', () => resolve(false));
  });
}
