// The webhook with several sidecar sets: one patch that carries every matching set, and a
// second admission of the pod it made that changes nothing.

import { applyPatch, type Operation } from 'fast-json-patch';
import { makeSnapshot, mustParseConfig, setRevisionLabel, type PodLike } from '@outrigger/shared';
import { admissionReview } from '@outrigger/testkit';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { admitPod, type AdmissionState } from '../src/admit';
import { createAdmissionHandler } from '../src/admission-handler';
import { BodyBudget } from '../src/body';
import { silentLogger } from '../src/log';
import { WebhookMetrics } from '../src/metrics';
import { parseReview } from '../src/review';

const config = mustParseConfig(
  [
    'sets:',
    '  - name: log-shipper',
    '    containers: [{name: shipper, image: "ghcr.io/acme/shipper:1.0"}]',
    '  - name: agent',
    '    order: 300',
    '    position: after-app',
    '    nativeSidecar: "false"',
    '    containers: [{name: agent, image: "ghcr.io/acme/agent:2"}]',
  ].join('\n'),
);

const state: AdmissionState = {
  snapshot: makeSnapshot(config),
  namespaces: new Map([
    ['shop', { name: 'shop', annotations: { 'outrigger.dev/inject': 'enabled' } }],
  ]),
  nativeSidecarSupported: true,
  systemNamespace: 'outrigger-system',
};

const decoded = (patch: string | undefined): Operation[] =>
  patch === undefined ? [] : (JSON.parse(Buffer.from(patch, 'base64').toString()) as Operation[]);

describe('the webhook with several sidecar sets', () => {
  const pod: PodLike = {
    metadata: { name: 'p', labels: { app: 'a' } },
    spec: { containers: [{ name: 'app' }] },
  };

  it('admits a pod with every set in one patch, and admits the result unchanged', () => {
    const first = admitPod(parseReview(admissionReview(pod)), state);
    expect(first.result).toEqual({ outcome: 'injected', reason: 'injected' });
    const after = applyPatch(
      structuredClone(pod),
      decoded(first.response.patch),
      true,
      false,
    ).newDocument;
    expect(after.spec?.initContainers?.map((c) => c.name)).toEqual([
      'outrigger-init',
      'outrigger-proxy',
      'shipper',
    ]);
    expect(after.spec?.containers.map((c) => c.name)).toEqual(['app', 'agent']);
    expect(Object.keys(after.metadata?.labels ?? {})).toEqual(
      expect.arrayContaining([setRevisionLabel('log-shipper'), setRevisionLabel('agent')]),
    );

    const second = admitPod(parseReview(admissionReview(after)), state);
    expect(second.result).toEqual({ outcome: 'skipped', reason: 'already-injected' });
    expect(second.response.patch).toBeUndefined();
    expect(second.response.warnings).toBeUndefined();
  });

  it('counts each set a pod was given, by name', async () => {
    const metrics = new WebhookMetrics(new Registry());
    const handler = createAdmissionHandler({
      state: () => state,
      hasSeen: () => true,
      ensureRevision: () => Promise.resolve(),
      metrics,
      logger: silentLogger(),
      onError: 'allow',
      maxBodyBytes: 100_000,
      bodyBudget: new BodyBudget(100_000),
    });
    const server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const optedOut = {
        ...pod,
        metadata: { ...pod.metadata, labels: { 'agent.sets.outrigger.dev/inject': 'disabled' } },
      };
      for (const p of [pod, pod, optedOut]) {
        const res = await fetch(`http://127.0.0.1:${port}/mutate/pods`, {
          method: 'POST',
          body: admissionReview(p),
        });
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    } finally {
      server.close();
    }
    const text = await metrics.registry.metrics();
    const count = (set: string) =>
      new RegExp(`^outrigger_webhook_set_injections_total\\{set="${set}"\\} (\\d+)$`, 'm').exec(
        text,
      )?.[1];
    expect([count('proxy'), count('log-shipper'), count('agent')]).toEqual(['3', '3', '2']);
  });
});
