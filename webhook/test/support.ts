// Test support: an HTTPS client with keep-alive, and what the webhook's AdmissionReview answers
// hold (the reviews themselves come from @outrigger/testkit's admissionReview).

import { type Agent, request } from 'node:https';
import type { TLSSocket } from 'node:tls';

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
