// The admission handler's two ways through a request: a small body answered as soon as it has
// arrived, and, for a pod that asks for a revision not seen here or for a body without a
// declared length, the way through promises. Both answer, and both leave nothing in flight.

import { createServer, request, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { CONFIG_REVISION, defaultConfig, makeSnapshot } from '@outrigger/shared';
import { createAdmissionHandler } from '../src/admission-handler';
import type { AdmissionState } from '../src/admit';
import { BodyBudget } from '../src/body';
import { silentLogger } from '../src/log';
import { WebhookMetrics } from '../src/metrics';
import { admissionReview, waitFor } from '@outrigger/testkit';

const state: AdmissionState = {
  snapshot: makeSnapshot(defaultConfig()),
  namespaces: undefined,
  nativeSidecarSupported: true,
  systemNamespace: 'outrigger-system',
};

/** A pod a ReplicaSet made from a template stamped with `revision`. */
const pinnedPod = (revision: string): unknown => ({
  metadata: {
    name: 'web-1',
    annotations: { [CONFIG_REVISION]: revision },
    ownerReferences: [
      { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-5d', controller: true },
    ],
  },
  spec: { containers: [{ name: 'app' }] },
});

describe('the admission handler', () => {
  let server: Server;
  let port: number;
  const metrics = new WebhookMetrics(new Registry());
  const asked: string[] = [];
  let release: () => void = () => undefined;

  beforeAll(async () => {
    const handler = createAdmissionHandler({
      state: () => state,
      hasSeen: (revision) => revision === state.snapshot.revision,
      ensureRevision: (revision) => {
        asked.push(revision);
        return new Promise<void>((resolve) => (release = resolve));
      },
      metrics,
      logger: silentLogger(),
      onError: 'allow',
      maxBodyBytes: 1 << 20,
      bodyBudget: new BodyBudget(1 << 20),
    });
    server = createServer(handler);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(() => new Promise((r) => server.close(r)));

  /** POSTs `body`, with its length declared or chunked; the status and the parsed answer. */
  function post(body: string, chunked = false): Promise<{ status: number; answer: unknown }> {
    return new Promise((resolve, reject) => {
      const headers = chunked ? {} : { 'content-length': Buffer.byteLength(body) };
      const req = request(
        { host: '127.0.0.1', port, path: '/mutate/pods', method: 'POST', headers },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, answer: JSON.parse(text) }));
        },
      );
      req.on('error', reject);
      if (chunked) req.write(body.slice(0, 10));
      req.end(chunked ? body.slice(10) : body);
    });
  }

  /** The pods endpoint's in-flight count, as the metrics last read it (kept fresh by a poll). */
  let inFlightNow = '';
  const poll = setInterval(() => {
    void inFlight().then((line) => (inFlightNow = line.split(' ').pop() ?? ''));
  }, 10);
  afterAll(() => clearInterval(poll));

  const inFlight = async (): Promise<string> =>
    (await metrics.registry.metrics())
      .split('\n')
      .filter((l) => l.startsWith('outrigger_webhook_requests_in_flight{'))
      .join('\n');

  it.each([
    ['declared small', false],
    ['chunked', true],
  ])(
    'answers a %s body that asks for an unseen revision once the refresh is done',
    async (_name, chunked) => {
      const before = asked.length;
      const answered = post(
        admissionReview(pinnedPod('0123456789'), { uid: `u-${String(chunked)}` }),
        chunked,
      );
      await waitFor('the handler to be asked about the chunked body', () => asked.length > before);
      expect(asked[asked.length - 1]).toBe('0123456789');
      expect(await inFlight()).toBe('outrigger_webhook_requests_in_flight{endpoint="pods"} 1');
      release();
      const { status, answer } = await answered;
      expect(status).toBe(200);
      expect(answer).toMatchObject({ response: { uid: `u-${String(chunked)}`, allowed: true } });
      expect(await inFlight()).toBe('outrigger_webhook_requests_in_flight{endpoint="pods"} 0');
    },
  );

  it('lets a small body cut off by its client go, and answers the next', async () => {
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write('POST /mutate/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n{"kind":');
    await waitFor('the cut request to be in flight', () => inFlightNow === '1');
    socket.destroy();
    await waitFor('the cut request to leave the in-flight count', () => inFlightNow === '0');
    const { status } = await post(
      admissionReview(pinnedPod(state.snapshot.revision), { uid: 'after' }),
    );
    expect(status).toBe(200);
  });

  it('answers a small body of the revision in force at once', async () => {
    const { status, answer } = await post(
      admissionReview(pinnedPod(state.snapshot.revision), { uid: 'now' }),
    );
    expect(status).toBe(200);
    expect(answer).toMatchObject({
      response: { uid: 'now', allowed: true, patchType: 'JSONPatch' },
    });
    expect(await inFlight()).toBe('outrigger_webhook_requests_in_flight{endpoint="pods"} 0');
  });
});
