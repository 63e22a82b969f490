// certificates.mode=cert-manager with cert-manager really running: cert-manager v1.21.2 (built
// from its Go module, e2e/src/cert-manager.ts) installed on the real node, then the chart with
// its own self-signed root, CA and CA Issuer. Proven here: cert-manager's webhook validates its
// resources; Outrigger's webhook serves the certificate cert-manager wrote, signed by
// cert-manager's CA; the CA injector wrote that CA into every entry of Outrigger's webhook
// configuration; and a re-issuance forced through cert-manager (as `cmctl renew` does it) is
// served while pods keep being created, none of them failing admission.
// Runs on the local cluster's real node only (the cert-manager image is built here).

import * as tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import {
  REVISION,
  SYSTEM_NAMESPACE,
  TLS_SECRET_NAME,
  CA_SECRET_NAME,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_SERVICE,
} from '@outrigger/shared';
import {
  connect,
  done,
  inClusterTarget,
  isLocalCluster,
  pending,
  streamPodsDuring,
  useInstall,
  waitFor,
  type InClusterTarget,
} from '../src';
import {
  CERT_MANAGER_NAMESPACE,
  installCertManager,
  readCertificate,
  secretData,
  triggerIssuance,
  uninstallCertManager,
} from '../src/cert-manager';

const MINUTES = 60_000;
const SERVING_NAME = `${WEBHOOK_SERVICE}.${SYSTEM_NAMESPACE}.svc`;
/** The chart's serving Certificate (manifests/chart/templates/certificate.yaml). */
const CERTIFICATE = 'outrigger-webhook';

const target = inClusterTarget();
const skip =
  typeof target === 'string'
    ? target
    : isLocalCluster()
      ? ''
      : 'the cert-manager image is built for the local real node only';
const describeHere = skip ? describe.skip : describe;
if (skip) process.stderr.write(`[e2e] cert-manager suite skipped: ${skip}\n`);

const pem = (base64: string) => Buffer.from(base64, 'base64').toString('utf8');

/** The certificate a webhook pod presents, verified against `ca` for the Service's name. */
function servedCertificate(host: string, port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host, port, ca, servername: SERVING_NAME }, () => {
      const cert = socket.getPeerX509Certificate();
      socket.end();
      if (cert) resolve(cert);
      else reject(new Error(`${host}:${port} presented no certificate`));
    });
    socket.setTimeout(5000, () => socket.destroy(new Error(`${host}:${port}: TLS timed out`)));
    socket.once('error', reject);
  });
}

describeHere('certificates.mode=cert-manager, with cert-manager running', () => {
  const cluster = connect();
  const { image, proxyValues } = target as InClusterTarget;
  let app = '';

  // cert-manager first: the chart's Issuers and Certificates need its CRDs and its webhook.
  beforeAll(() => installCertManager(cluster), 25 * MINUTES);
  useInstall(cluster, {
    prefix: 'cert-manager',
    image,
    values: ['certificates.mode=cert-manager', ...proxyValues],
    created: (name) => (app = name),
  });
  // after useInstall's afterAll, which uninstalls the chart
  afterAll(() => uninstallCertManager(cluster), 3 * MINUTES);

  /** Every ready webhook pod's address and HTTPS port. */
  const webhookEndpoints = async () => {
    const service = await cluster.core.readNamespacedService({
      name: WEBHOOK_SERVICE,
      namespace: SYSTEM_NAMESPACE,
    });
    const selector = Object.entries(service.spec?.selector ?? {})
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    const pods = await cluster.core.listNamespacedPod({
      namespace: SYSTEM_NAMESPACE,
      labelSelector: selector,
    });
    return pods.items
      .filter((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
      .map((p) => {
        const ports = p.spec?.containers.flatMap((c) => c.ports ?? []) ?? [];
        const https = ports.find((port) => port.name === 'https');
        return { host: p.status?.podIP ?? '', port: https?.containerPort ?? 0 };
      });
  };

  /** The serving certificate every ready webhook pod presents, PEM, or why not one. */
  const servedEverywhere = async (ca: string) => {
    const endpoints = await webhookEndpoints();
    if (endpoints.length === 0) return pending('no ready webhook pod');
    const served = await Promise.all(endpoints.map((e) => servedCertificate(e.host, e.port, ca)));
    const distinct = new Set(served.map((c) => c.toString()));
    const [only] = distinct;
    return distinct.size === 1 && only ? done(only) : pending(`${distinct.size} certificates`);
  };

  const secretCert = async () =>
    pem(await secretData(cluster, SYSTEM_NAMESPACE, TLS_SECRET_NAME, 'tls.crt'));

  it("cert-manager's own webhook validates its resources", async () => {
    const invalid = {
      apiVersion: 'cert-manager.io/v1',
      kind: 'Certificate',
      metadata: { name: 'e2e-invalid', namespace: CERT_MANAGER_NAMESPACE },
      spec: { secretName: 'e2e-invalid', issuerRef: { name: 'none' } },
    };
    // the schema allows it; cert-manager's validation asks for a name or an identity
    await expect(cluster.objects.create(invalid, undefined, 'All')).rejects.toThrow(
      /webhook\.cert-manager\.io/,
    );
    const valid = { ...invalid, spec: { ...invalid.spec, dnsNames: ['e2e.example'] } };
    await expect(cluster.objects.create(valid, undefined, 'All')).resolves.toBeTruthy();
  });

  it("serves the certificate cert-manager wrote to outrigger-webhook-tls, issued by cert-manager's CA", async () => {
    // The CA that signed the serving certificate, as cert-manager records it beside it: the one
    // its CA injector injects. (A CA the chart's CA Certificate re-issued since signs only the
    // next serving certificate: cert-manager does not re-issue on an issuer's change.)
    const caPem = pem(await secretData(cluster, SYSTEM_NAMESPACE, TLS_SECRET_NAME, 'ca.crt'));
    expect(caPem).toContain('BEGIN CERTIFICATE');
    const caIssued = new X509Certificate(
      pem(await secretData(cluster, SYSTEM_NAMESPACE, CA_SECRET_NAME, 'tls.crt')),
    );
    expect(caIssued.subject).toBe(new X509Certificate(caPem).subject);
    const inSecret = new X509Certificate(await secretCert());
    const ca = new X509Certificate(caPem);
    expect(ca.ca).toBe(true);
    expect(inSecret.checkIssued(ca)).toBe(true);
    expect(inSecret.verify(ca.publicKey)).toBe(true);
    expect(inSecret.subjectAltName).toContain(`DNS:${SERVING_NAME}`);
    // verified over TLS against that CA alone, for the Service's name
    const served = await waitFor('every webhook pod serving one certificate', () =>
      servedEverywhere(caPem),
    );
    expect(served).toBe(inSecret.toString());
  });

  it("has its webhook configuration's caBundle injected by cert-manager's CA injector", async () => {
    const ca = await secretData(cluster, SYSTEM_NAMESPACE, TLS_SECRET_NAME, 'ca.crt');
    const config = await cluster.admission.readMutatingWebhookConfiguration({
      name: WEBHOOK_CONFIGURATION_NAME,
    });
    expect(config.metadata?.annotations?.['cert-manager.io/inject-ca-from']).toBe(
      `${SYSTEM_NAMESPACE}/${CERTIFICATE}`,
    );
    const webhooks = config.webhooks ?? [];
    expect(webhooks.length).toBeGreaterThan(0);
    // the chart renders no caBundle in this mode: whatever is there, the injector wrote
    for (const webhook of webhooks) expect(pem(webhook.clientConfig.caBundle ?? '')).toBe(pem(ca));
    const writers = (config.metadata?.managedFields ?? []).map((f) => f.manager);
    expect(writers).toContain('cert-manager-cainjector');
  });

  it(
    'serves a re-issued certificate after a rotation forced through cert-manager, with 0 failed admissions',
    async () => {
      const caPem = pem(await secretData(cluster, SYSTEM_NAMESPACE, TLS_SECRET_NAME, 'ca.crt'));
      const before = await secretCert();
      const revision = (await readCertificate(cluster, SYSTEM_NAMESPACE, CERTIFICATE)).status
        ?.revision;
      const stream = await streamPodsDuring(cluster, app, 300, async () => {
        await triggerIssuance(cluster, SYSTEM_NAMESPACE, CERTIFICATE);
        const renewed = await waitFor(
          'cert-manager writing a new certificate to outrigger-webhook-tls',
          async () => {
            const now = await secretCert();
            return now && now !== before ? done(now) : pending('the same certificate');
          },
          { timeoutMs: 2 * MINUTES, intervalMs: 500 },
        );
        // the positive signal: every webhook pod serves the new certificate
        const served = await waitFor(
          'every webhook pod serving the re-issued certificate',
          async () => {
            const seen = await servedEverywhere(caPem);
            return seen.outcome === 'done' && seen.value !== new X509Certificate(renewed).toString()
              ? pending('still the old certificate')
              : seen;
          },
          { timeoutMs: 2 * MINUTES, intervalMs: 500 },
        );
        expect(served).toBe(new X509Certificate(renewed).toString());
      });
      // streamPodsDuring saw 5 more pods admitted after the new certificate was served
      expect(stream.failures).toEqual([]);
      expect(stream.admissions.length).toBeGreaterThan(8);
      // Every pod injected; one that is not is shown with its marks (a skip reason, a warning).
      const uninjected = stream.admissions
        .filter((a) => !a.pod?.metadata?.labels?.[REVISION])
        .map((a) => ({
          name: a.name,
          at: new Date(a.at).toISOString(),
          labels: a.pod?.metadata?.labels,
        }));
      expect(uninjected).toEqual([]);
      const certificate = await readCertificate(cluster, SYSTEM_NAMESPACE, CERTIFICATE);
      expect(certificate.status?.revision).toBe((revision ?? 0) + 1);
      expect(certificate.status?.conditions).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'Ready', status: 'True' })]),
      );
    },
    8 * MINUTES,
  );
});
