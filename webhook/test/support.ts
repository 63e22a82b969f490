// Test support: an HTTPS client with keep-alive, and AdmissionReviews.

import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import type { TLSSocket } from 'node:tls';
import { parseAllDocuments } from 'yaml';
import { TEMPLATE_PATHS, isRecord, type PodLike } from '@outrigger/shared';

export interface Reply {
  status: number;
  body: string;
  fingerprint: string;
}

export function post(
  port: number,
  path: string,
  body: string,
  options: { agent?: Agent; ca: string[] },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: options.agent,
        ca: options.ca,
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        // Read now: with keep-alive the socket goes back to the agent before 'end'.
        const fingerprint =
          (res.socket as TLSSocket | null)?.getPeerCertificate().fingerprint256 ?? '';
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            fingerprint,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

let counter = 0;
export function review(object: unknown, overrides: Record<string, unknown> = {}): string {
  counter++;
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: `uid-${counter}`,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      operation: 'CREATE',
      namespace: 'shop',
      object,
      ...overrides,
    },
  });
}

export interface ReviewResponse {
  uid: string;
  allowed: boolean;
  patch?: string;
  patchType?: string;
  warnings?: string[];
  status?: { code: number; message: string };
}

export function responseOf(reply: Reply): ReviewResponse {
  const parsed = JSON.parse(reply.body) as {
    apiVersion: string;
    kind: string;
    response: ReviewResponse;
  };
  if (parsed.apiVersion !== 'admission.k8s.io/v1' || parsed.kind !== 'AdmissionReview')
    throw new Error(`not an AdmissionReview: ${reply.body}`);
  return parsed.response;
}

export function patchOf(r: ReviewResponse): { op: string; path: string; value: unknown }[] {
  return r.patch
    ? (JSON.parse(Buffer.from(r.patch, 'base64').toString('utf8')) as {
        op: string;
        path: string;
        value: unknown;
      }[])
    : [];
}

/** ../shared/corpus beside the repository, from the sources (jest) or from dist/ (the bench). */
const CORPUS =
  [join(__dirname, '..', '..', '..'), join(__dirname, '..', '..', '..', '..')]
    .map((root) => join(root, 'shared', 'corpus'))
    .find((dir) => existsSync(join(dir, 'istio'))) ??
  join(__dirname, '..', '..', '..', 'shared', 'corpus');

/** Whether ../shared/corpus is beside the repository; a clone alone skips the tests that read it. */
export const HAVE_CORPUS = existsSync(CORPUS);
let skipSaid = false;
/**
 * `it`, or `it.skip` without the corpus. Chosen when a test is declared, not when this file is
 * loaded: `make fuzz` loads it outside jest, where there is no `it`.
 */
export function withCorpus(name: string, fn: jest.ProvidesCallback, timeout?: number): void {
  if (HAVE_CORPUS) return it(name, fn, timeout);
  if (!skipSaid) process.stderr.write(`corpus not found at ${CORPUS}: skipping its tests\n`);
  skipSaid = true;
  it.skip(name, fn, timeout);
}

/** Every Pod and pod template in the corpus, as the pods the API server would send. */
export function corpusPods(): { source: string; pod: PodLike }[] {
  const out: { source: string; pod: PodLike }[] = [];
  const visit = (value: unknown, source: string): void => {
    if (!isRecord(value)) return;
    if (Array.isArray(value.items)) return value.items.forEach((i) => visit(i, source));
    const path = TEMPLATE_PATHS[String(value.kind)];
    if (!path) return;
    const template = path.reduce<unknown>((o, k) => (isRecord(o) ? o[k] : undefined), value);
    if (isRecord(template)) out.push({ source: `${source} ${String(value.kind)}`, pod: template });
  };
  if (!HAVE_CORPUS) return out;
  const files = ['istio', 'linkerd'].flatMap((dir) =>
    readdirSync(join(CORPUS, dir)).map((f) => `${dir}/${f}`),
  );
  for (const file of files) {
    const docs = parseAllDocuments(readFileSync(join(CORPUS, file), 'utf8'));
    for (const doc of docs) if (doc.errors.length === 0) visit(doc.toJS(), file);
  }
  return out;
}

/** Waits, checking every 10 ms, until `condition` holds; throws after 5 s. */
export async function waitFor(condition: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await condition()); i++) await new Promise((r) => setTimeout(r, 10));
  if (!(await condition())) throw new Error('timed out');
}
