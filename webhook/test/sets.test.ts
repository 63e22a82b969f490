// The webhook with several sidecar sets: one patch that carries every matching set, and a
// second admission of the pod it made that changes nothing.

import { applyPatch, type Operation } from 'fast-json-patch';
import {
  appliedSets,
  makeSnapshot,
  mustParseConfig,
  setRevisionContent,
  setRevisionLabel,
  setWaveKeys,
  type HeldSets,
  type PodLike,
} from '@outrigger/shared';
import { admissionReview } from '@outrigger/testkit';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { admitPod, admitWorkload, type AdmissionState } from '../src/admit';
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
    ['plain', { name: 'plain' }],
  ]),
  nativeSidecarSupported: true,
  systemNamespace: 'outrigger-system',
};

const decoded = (patch: string | undefined): Operation[] =>
  patch === undefined ? [] : (JSON.parse(Buffer.from(patch, 'base64').toString()) as Operation[]);

/** The pod as the webhook's answer leaves it. */
const patched = (pod: PodLike, answer: { response: { patch?: string } }): PodLike =>
  applyPatch(structuredClone(pod), decoded(answer.response.patch), true, false).newDocument;

describe('the webhook with several sidecar sets', () => {
  const pod: PodLike = {
    metadata: { name: 'p', labels: { app: 'a' } },
    spec: { containers: [{ name: 'app' }] },
  };

  it('admits a pod with every set in one patch, and admits the result unchanged', () => {
    const first = admitPod(parseReview(admissionReview(pod)), state);
    expect(first.result).toEqual({ outcome: 'injected', reason: 'injected' });
    const after = patched(pod, first);
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

  it.each([
    ['a host-network pod that got the other sets', { hostNetwork: true }, 'shop'],
    ['a pod of a namespace that is not opted in', {}, 'plain'],
  ])('admits %s a second time with no patch: its skip mark stays as it was', (_what, spec, ns) => {
    const marked = { ...pod, spec: { ...pod.spec, ...spec } } as PodLike;
    const first = admitPod(parseReview(admissionReview(marked, { namespace: ns })), state);
    const after = patched(marked, first);
    const mark = after.metadata?.labels?.['outrigger.dev/skipped'];
    expect(mark).toBe(ns === 'shop' ? 'host-network' : 'namespace-not-enabled');

    const second = admitPod(parseReview(admissionReview(after, { namespace: ns })), state);
    expect(second.response.patch).toBeUndefined();
    const again = patched(after, second);
    expect(again).toEqual(after);
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

describe("each set's stamp and pin", () => {
  const shipperKeys = setWaveKeys('log-shipper');
  const setNamed = (name: string) => appliedSets(config).find((a) => a.set.name === name);
  const [agent, shipper] = [setNamed('agent'), setNamed('log-shipper')];
  const workloadReview = (object: unknown, old?: unknown) =>
    parseReview(
      admissionReview(object, {
        kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
        resource: { group: 'apps', version: 'v1', resource: 'deployments' },
        operation: old ? 'UPDATE' : 'CREATE',
        ...(old ? { oldObject: old } : {}),
      }),
    );
  const deployment = (annotations: Record<string, string> = {}, labels = { app: 'web' }) => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'shop' },
    spec: {
      selector: { matchLabels: { app: 'web' } },
      template: { metadata: { labels, annotations }, spec: { containers: [{ name: 'app' }] } },
    },
  });

  it("a created workload's template is stamped with every set that selects it, in the proxy's one operation", () => {
    const created = admitWorkload(workloadReview(deployment()), state);
    expect(created.result).toEqual({ outcome: 'stamped', reason: 'stamped' });
    const after = applyPatch(
      deployment(),
      decoded(created.response.patch),
      true,
      false,
    ).newDocument;
    const annotations = after.spec.template.metadata.annotations;
    expect(annotations[shipperKeys.configRevision]).toBe(shipper?.revision);
    expect(annotations[setWaveKeys('agent').configRevision]).toBe(agent?.revision);
    expect(annotations['outrigger.dev/config-revision']).toBe(state.snapshot.revision);
  });

  it("an update that moves only a set's stamp (the controller's restart) is left as written", () => {
    const stamped = applyPatch(
      deployment(),
      decoded(admitWorkload(workloadReview(deployment()), state).response.patch),
      true,
      false,
    ).newDocument;
    const moved = structuredClone(stamped);
    moved.spec.template.metadata.annotations[shipperKeys.configRevision] = 'ffffffffff';
    const update = admitWorkload(workloadReview(moved, stamped), state);
    expect(update.result).toEqual({ outcome: 'unchanged', reason: 'stamp-current' });
  });

  it('a pod pinned to a set revision the history holds gets it; one it lost gets the current, with a warning', () => {
    const older = mustParseConfig(
      'sets:\n  - name: log-shipper\n    containers: [{name: shipper, image: "ghcr.io/acme/shipper:0.9"}]',
    );
    const old = appliedSets(older)[0];
    if (!old) throw new Error('no set in the older configuration');
    const held: HeldSets = new Map([
      ['log-shipper', new Map([[old.revision, setRevisionContent(old.set)]])],
    ]);
    const pinnedPod = (revision: string): PodLike => ({
      metadata: {
        name: 'web-1',
        labels: { app: 'web' },
        annotations: { [shipperKeys.configRevision]: revision },
        ownerReferences: [
          {
            apiVersion: 'apps/v1',
            kind: 'ReplicaSet',
            name: 'web-5d4',
            uid: 'u',
            controller: true,
          },
        ],
      },
      spec: { containers: [{ name: 'app' }] },
    });
    const image = (a: ReturnType<typeof admitPod>) => {
      const after = applyPatch(
        structuredClone(pinnedPod('x')),
        decoded(a.response.patch),
        true,
        false,
      ).newDocument;
      return after.spec?.initContainers?.find((c) => c.name === 'shipper')?.image;
    };
    const pinned = admitPod(parseReview(admissionReview(pinnedPod(old.revision))), {
      ...state,
      pinnedSets: held,
    });
    expect(image(pinned)).toBe('ghcr.io/acme/shipper:0.9');
    expect(pinned.response.warnings).toBeUndefined();
    const lost = admitPod(parseReview(admissionReview(pinnedPod('ffffffffff'))), {
      ...state,
      pinnedSets: held,
    });
    expect(image(lost)).toBe('ghcr.io/acme/shipper:1.0');
    expect(lost.response.warnings?.join(' ')).toContain('revision ffffffffff of set log-shipper');
  });
});
