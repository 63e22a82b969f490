// HTTPS-level tests of the standalone webhook: real AdmissionReviews built from the corpus,
// every kind of bad input, concurrency, certificate rotation and configuration reload.

import { copyFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { Agent, get as httpsGet } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch, type Operation } from 'fast-json-patch';
import { Registry } from 'prom-client';
import { TEMPLATE_PATHS, type PodLike } from '@outrigger/shared';
import {
  admissionReview,
  corpusPods,
  describeWithCorpus,
  haveCorpus,
  makeServingCert,
  realisticPod,
  waitFor,
  type ServingCert,
} from '@outrigger/testkit';
import { parseFlags } from '../src/flags';
import { silentLogger } from '../src/log';
import { startWebhook, type Webhook } from '../src/main';
import { WebhookMetrics } from '../src/metrics';
import { patchOf, post, responseOf } from './support';

const dir = mkdtempSync(join(tmpdir(), 'outrigger-webhook-'));
let cert: ServingCert;
let webhook: Webhook;
let metrics: WebhookMetrics;
const configFile = join(dir, 'config.yaml');
let agent: Agent;

jest.setTimeout(30_000);

/** Certificates the test client trusts: the first, and the second once rotation starts. */
const trusted: string[] = [];
const certPath = join(dir, 'serving.crt');
const keyPath = join(dir, 'serving.key');

beforeAll(async () => {
  cert = makeServingCert({ dir, name: 'first' });
  trusted.push(cert.caPem);
  copyFileSync(cert.certFile, certPath);
  copyFileSync(cert.keyFile, keyPath);
  writeFileSync(configFile, 'proxy:\n  logLevel: info\n');
  metrics = new WebhookMetrics(new Registry());
  const flags = parseFlags([
    '--listen',
    '127.0.0.1:0',
    '--metrics-listen',
    '127.0.0.1:0',
    '--tls-cert-file',
    certPath,
    '--tls-key-file',
    keyPath,
    '--config-file',
    configFile,
    '--shutdown-delay-seconds',
    '0',
    '--max-body-bytes',
    '200000',
  ]);
  webhook = await startWebhook(flags, { logger: silentLogger(), metrics });
  agent = new Agent({ keepAlive: true, maxSockets: 16 });
});

afterAll(async () => {
  agent.destroy();
  await webhook.shutdown();
});

const send = (path: string, body: string) =>
  post(webhook.httpsPort, path, body, { agent, ca: trusted });

describe('POST /mutate/pods', () => {
  describeWithCorpus('every corpus pod', () => {
    it('is answered: uid echoed, additive patch, injected or marked skipped', async () => {
      const pods = corpusPods(TEMPLATE_PATHS);
      expect(pods.length).toBeGreaterThan(100);
      let injected = 0;
      for (const { file, kind, pod } of pods) {
        const source = `${file} ${kind}`;
        const body = admissionReview(pod);
        const uid = (JSON.parse(body) as { request: { uid: string } }).request.uid;
        const reply = await send('/mutate/pods', body);
        expect(reply.status).toBe(200);
        const r = responseOf(reply);
        expect({ source, uid: r.uid, allowed: r.allowed, patchType: r.patchType }).toEqual({
          source,
          uid,
          allowed: true,
          patchType: 'JSONPatch',
        });
        const ops = patchOf(r);
        expect(ops.every((o) => o.op === 'add')).toBe(true);
        const result = applyPatch(
          structuredClone(pod) as PodLike,
          ops as Operation[],
          true,
          false,
        ).newDocument;
        const labels = result.metadata?.labels ?? {};
        if (labels['outrigger.dev/revision']) injected++;
        else expect(labels['outrigger.dev/skipped']).toMatch(/^[a-z-]+$/);
      }
      expect(injected).toBeGreaterThan(90);
    });
  });

  it('passes override warnings through to kubectl', async () => {
    const pod = {
      metadata: { annotations: { 'config.outrigger.dev/proxy-cpu-limit': 'lots' } },
      spec: { containers: [{ name: 'a' }] },
    };
    const r = responseOf(await send('/mutate/pods', admissionReview(pod)));
    expect(r.warnings).toEqual([
      expect.stringContaining('config.outrigger.dev/proxy-cpu-limit="lots" ignored'),
    ]);
  });

  it('allows what is not ours unchanged: other kinds, other operations, subresources', async () => {
    const pod = { spec: { containers: [{ name: 'a' }] } };
    for (const extra of [
      { kind: { group: '', version: 'v1', kind: 'Service' } },
      { operation: 'UPDATE', oldObject: pod },
      { operation: 'DELETE' },
      { subResource: 'ephemeralcontainers' },
      { object: null },
    ]) {
      const r = responseOf(await send('/mutate/pods', admissionReview(pod, extra)));
      expect(r).toEqual({ uid: expect.any(String), allowed: true });
    }
  });

  it('admits a pod it cannot handle unchanged, with its reason', async () => {
    const r = responseOf(
      await send(
        '/mutate/pods',
        admissionReview({ metadata: { name: 'x' }, spec: { containers: [] } }),
      ),
    );
    expect(r).toEqual({ uid: expect.any(String), allowed: true });
    expect(await metrics.registry.metrics()).toMatch(/reason="invalid-pod-spec"\} 1/);
  });
});

describe('bad input', () => {
  it.each([
    ['not JSON', '{"apiVersion":', /body is not JSON/],
    ['not an object', '[1,2]', /must be a JSON object/],
    [
      'wrong kind',
      '{"apiVersion":"admission.k8s.io/v1","kind":"Pod"}',
      /kind must be AdmissionReview/,
    ],
    [
      'v1beta1',
      JSON.stringify({
        apiVersion: 'admission.k8s.io/v1beta1',
        kind: 'AdmissionReview',
        request: {},
      }),
      /apiVersion must be admission.k8s.io\/v1/,
    ],
    [
      'no request',
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}',
      /request must be an object; got nothing/,
    ],
    [
      'no uid',
      admissionReview({}, { uid: '' }),
      /request.uid must be a non-empty string; got string ""/,
    ],
    ['bad kind', admissionReview({}, { kind: 'Pod' }), /request.kind must be/],
    ['object not an object', admissionReview('a pod'), /request.object must be an object/],
    [
      'a field of the pod of the wrong type',
      admissionReview({ metadata: { name: 'x' }, spec: { containers: 'nope' } }),
      /request.object.spec.containers must be a list; got string "nope"/,
    ],
    [
      'an owner reference without a kind (was the fail-open path)',
      admissionReview({
        metadata: { ownerReferences: [{ name: 'web-1' }] },
        spec: { containers: [] },
      }),
      /request.object.metadata.ownerReferences\[0\].kind is required: set it to a string/,
    ],
    [
      'an owner reference with a null name (was the fail-open path)',
      admissionReview({
        metadata: { ownerReferences: [{ kind: 'ReplicaSet', name: null }] },
        spec: { containers: [{ name: 'a' }] },
      }),
      /request.object.metadata.ownerReferences\[0\].name is required: set it to a string/,
    ],
    [
      'a deeply nested kind',
      `{"kind":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
      /nests arrays and objects deeper than 100 levels/,
    ],
    [
      'a deeply nested apiVersion',
      `{"kind":"AdmissionReview","apiVersion":${'['.repeat(50)}${']'.repeat(50)}}`,
      /apiVersion must be admission.k8s.io\/v1; got a list/,
    ],
  ])('%s: 400 with a message', async (_name, body, message) => {
    const reply = await send('/mutate/pods', body);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatch(message);
  });

  it('413 above the body limit, 404 and 405 elsewhere', async () => {
    const huge = admissionReview({
      metadata: { annotations: { big: 'x'.repeat(300_000) } },
      spec: { containers: [{ name: 'a' }] },
    });
    expect((await send('/mutate/pods', huge)).status).toBe(413);
    expect((await send('/nope', '{}')).status).toBe(404);
    const get = await new Promise<number>((resolve, reject) => {
      httpsGet(
        { host: '127.0.0.1', port: webhook.httpsPort, path: '/mutate/pods', ca: trusted, agent },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      ).on('error', reject);
    });
    expect(get).toBe(405);
  });

  it('counts malformed requests in the metrics', async () => {
    const text = await metrics.registry.metrics();
    expect(text).toMatch(
      /outrigger_webhook_admissions_total\{endpoint="pods",outcome="invalid",reason="malformed"\} [1-9]/,
    );
    expect(text).toMatch(
      /outrigger_webhook_admissions_total\{endpoint="pods",outcome="invalid",reason="body-too-large"\} 1/,
    );
    // Every bad input above is a 400 or a 413: none took the fail-open path.
    expect(text).not.toMatch(/outrigger_webhook_internal_errors_total\{[^}]*\} [1-9]/);
  });
});

describe('POST /mutate/workloads', () => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      replicas: 1,
      selector: {},
      template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'a' }] } },
    },
  };
  const apps = { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } };

  it('stamps on CREATE', async () => {
    const r = responseOf(await send('/mutate/workloads', admissionReview(deployment, apps)));
    expect(patchOf(r).map((o) => o.path)).toEqual([
      '/spec/template/metadata/labels/outrigger.dev~1stamped',
      '/spec/template/metadata/annotations',
    ]);
  });

  it('writes nothing on an UPDATE that leaves the template alone', async () => {
    const scaled = { ...deployment, spec: { ...deployment.spec, replicas: 5 } };
    const r = responseOf(
      await send(
        '/mutate/workloads',
        admissionReview(scaled, { ...apps, operation: 'UPDATE', oldObject: deployment }),
      ),
    );
    expect(r).toEqual({ uid: expect.any(String), allowed: true });
  });
});

describe('under load', () => {
  it('answers 300 concurrent requests, each with its own uid', async () => {
    // The corpus's pods when it is there, else a real API server's pod.
    const corpus = haveCorpus()
      ? corpusPods(TEMPLATE_PATHS)
          .slice(0, 30)
          .map((p) => p.pod)
      : [];
    const pods = corpus.length > 0 ? corpus : [realisticPod('load', 0)];
    const bodies = Array.from({ length: 300 }, (_, i) => admissionReview(pods[i % pods.length]));
    const replies = await Promise.all(bodies.map((b) => send('/mutate/pods', b)));
    const uids = bodies.map((b) => (JSON.parse(b) as { request: { uid: string } }).request.uid);
    expect(replies.map((r) => r.status)).toEqual(bodies.map(() => 200));
    expect(replies.map((r) => responseOf(r).uid)).toEqual(uids);
  });

  it('rotates the certificate under traffic without a failed request', async () => {
    const second = makeServingCert({ dir, name: 'second' });
    trusted.push(second.caPem);
    const ca = trusted;
    const seen = new Set<string>();
    let failures = 0;
    let sent = 0;
    let rotated = false;
    const deadline = Date.now() + 8000;
    const worker = async (): Promise<void> => {
      while (Date.now() < deadline) {
        // A fresh agent now and then, so new TLS handshakes happen during the rotation.
        const a = sent % 10 === 0 ? new Agent({ keepAlive: false, maxCachedSessions: 0 }) : agent;
        try {
          const reply = await post(
            webhook.httpsPort,
            '/mutate/pods',
            admissionReview({ spec: { containers: [{ name: 'a' }] } }),
            { agent: a, ca },
          );
          if (reply.status !== 200) failures++;
          if (a !== agent) seen.add(reply.fingerprint);
        } catch {
          failures++;
        }
        sent++;
        if (rotated && seen.size > 1) return;
      }
    };
    const workers = Array.from({ length: 4 }, () => worker());
    // Rotate under traffic: once requests are answered, a new handshake among them.
    await waitFor('traffic on the first certificate', () => sent >= 20 && seen.size === 1, {
      timeoutMs: 5_000,
    });
    copyFileSync(second.keyFile, keyPath);
    copyFileSync(second.certFile, certPath);
    rotated = true;
    await Promise.all(workers);
    expect(failures).toBe(0);
    expect(sent).toBeGreaterThan(20);
    expect(seen.size).toBe(2);
  });
});

describe('configuration', () => {
  const pod = { metadata: { labels: { app: 'a' } }, spec: { containers: [{ name: 'a' }] } };
  const revisionOf = async (): Promise<unknown> => {
    const ops = patchOf(responseOf(await send('/mutate/pods', admissionReview(pod))));
    return ops.find((o) => o.path.endsWith('outrigger.dev~1revision'))?.value;
  };

  it('picks up a new configuration, and keeps the last good one when a new one is invalid', async () => {
    const before = await revisionOf();
    writeFileSync(configFile, 'proxy:\n  logLevel: debug\n');
    await waitFor('a new revision in the answers', async () => (await revisionOf()) !== before, {
      timeoutMs: 10_000,
    });
    const good = await revisionOf();
    writeFileSync(configFile, 'proxy:\n  logLevel: chatty\n');
    await waitFor(
      'a failed reload in the metrics',
      async () =>
        /outrigger_webhook_config_reload_failures_total\{source="file [^"]+"\} 1/.test(
          await metrics.registry.metrics(),
        ),
      { timeoutMs: 10_000 },
    );
    expect(await revisionOf()).toBe(good);
    expect(await metrics.registry.metrics()).toMatch(
      new RegExp(`outrigger_webhook_config_revision\\{revision="${String(good)}"\\} 1`),
    );
  });
});
