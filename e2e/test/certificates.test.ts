// Self-managed certificates: the controller makes the webhook's CA and serving
// certificate, keeps them in their Secrets and writes the CA into every entry of the webhook
// configuration; the webhook serves from the Secret. With lifetimes of a minute or two, the
// serving certificate and the CA are both renewed during the test while dry-run pods go through
// the webhook without pause: none may come back without the sidecar.

import { X509Certificate } from 'node:crypto';
import {
  CA_SECRET_NAME,
  ENABLED,
  INJECTION_LABEL,
  REVISION,
  TLS_SECRET_NAME,
} from '@outrigger/shared';
import { connect, done, pending, TestInstall, waitFor, type Cluster, useTestInstall } from '../src';

const cluster: Cluster = connect();
const install = new TestInstall(cluster, {
  configYaml: 'proxy:\n  logLevel: info\n',
  selfManagedCertificates: true,
});
let probe = '';

useTestInstall(install, {
  build: ['webhook', 'controller'],
  then: start,
});

async function start(): Promise<void> {
  // Serving certificates live 45 s (renewed at 30 s), the CA 120 s (renewed at 80 s), and a
  // new CA is trusted 10 s before the serving certificate moves to it.
  await install.startController(
    'outrigger-controller',
    install.selfManagedCertificateArgs({
      certValiditySeconds: 45,
      caValiditySeconds: 120,
      caGraceSeconds: 10,
    }),
  );
  await install.resumeWebhook();
  await install.waitForWebhookCalls();
  probe = await install.newNamespace('cert-traffic', {
    labels: { [INJECTION_LABEL]: ENABLED },
    optedIn: true,
  });
}

async function secretCert(name: string, key: string): Promise<X509Certificate> {
  const secret = await cluster.core.readNamespacedSecret({ namespace: install.system, name });
  return new X509Certificate(Buffer.from(secret.data?.[key] ?? '', 'base64'));
}

describe('self-managed webhook certificates', () => {
  it('makes a CA and a serving certificate, and puts the CA in every caBundle', async () => {
    const ca = await secretCert(CA_SECRET_NAME, 'ca.crt');
    const serving = await secretCert(TLS_SECRET_NAME, 'tls.crt');
    expect(ca.ca).toBe(true);
    expect(serving.verify(ca.publicKey)).toBe(true);
    const config = await cluster.admission.readMutatingWebhookConfiguration({
      name: install.webhookConfigurationName,
    });
    const bundles = new Set((config.webhooks ?? []).map((w) => w.clientConfig.caBundle));
    expect(bundles.size).toBe(1);
    const [bundle] = [...bundles];
    const inBundle = Buffer.from(bundle ?? '', 'base64')
      .toString()
      .split(/(?=-----BEGIN CERTIFICATE-----)/)
      .map((pem) => new X509Certificate(pem).fingerprint256);
    expect(inBundle).toEqual([ca.fingerprint256]);
  });

  it('puts the caBundle back when someone changes it', async () => {
    const name = install.webhookConfigurationName;
    const config = await cluster.admission.readMutatingWebhookConfiguration({ name });
    const original = config.webhooks?.[0]?.clientConfig.caBundle;
    const webhooks = (config.webhooks ?? []).map((w, i) =>
      i === 0
        ? {
            ...w,
            clientConfig: {
              ...w.clientConfig,
              caBundle: Buffer.from('tampered').toString('base64'),
            },
          }
        : w,
    );
    await cluster.admission.replaceMutatingWebhookConfiguration({
      name,
      body: { ...config, webhooks },
    });
    await waitFor('the controller to restore the caBundle', async () => {
      const now = await cluster.admission.readMutatingWebhookConfiguration({ name });
      return now.webhooks?.[0]?.clientConfig.caBundle === original
        ? done(undefined)
        : pending('tampered');
    });
  });

  it('rotates the serving certificate and the CA under traffic without one failed admission', async () => {
    const servingSeen = new Set<string>();
    const casSeen = new Set<string>();
    let admitted = 0;
    const failures: string[] = [];
    // Traffic runs until the rotation is seen through: three serving certificates, two CAs, and
    // the serving certificate in use signed by the new CA (about 90 s in); at most 150 s.
    const deadline = Date.now() + 150_000;
    let movedToNewCa = false;
    let i = 0;
    while (!movedToNewCa && Date.now() < deadline) {
      try {
        const pod = await cluster.core.createNamespacedPod({
          namespace: probe,
          dryRun: 'All',
          body: {
            metadata: { name: `traffic-${i++}` },
            spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
          },
        });
        if (pod.metadata?.labels?.[REVISION]) admitted += 1;
        else failures.push(`${new Date().toISOString()} admitted without the sidecar`);
      } catch (error) {
        failures.push(`${new Date().toISOString()} ${String(error)}`);
      }
      if (i % 10 === 0) {
        const serving = await secretCert(TLS_SECRET_NAME, 'tls.crt');
        const ca = await secretCert(CA_SECRET_NAME, 'ca.crt');
        servingSeen.add(serving.fingerprint256);
        casSeen.add(ca.fingerprint256);
        movedToNewCa = servingSeen.size >= 3 && casSeen.size >= 2 && serving.verify(ca.publicKey);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // On a failure the whole object is shown: the certificates seen, and what failed when.
    expect({ failures, movedToNewCa, seen: [servingSeen.size, casSeen.size] }).toMatchObject({
      failures: [],
      movedToNewCa: true,
    });
    expect(admitted).toBeGreaterThan(100);
  }, 180_000);
});
