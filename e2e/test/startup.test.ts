// Start-up in the order users install: everything applied at once (RBAC, ConfigMap, webhook
// configuration), the webhook started before its certificate Secret exists, as on every fresh
// install in self-managed mode, where the controller makes the Secret. The webhook must stay
// alive and say so (/healthz 200, /readyz 503, a log line naming what it waits for), and serve
// as soon as the controller has made the Secret.

import { connect, probe, TestInstall, type Cluster, useTestInstall } from '../src';

const cluster: Cluster = connect();
const install = new TestInstall(cluster, {
  configYaml: 'proxy:\n  logLevel: info\n',
  selfManagedCertificates: true,
  prefix: 'startup-system',
});

useTestInstall(install, { build: ['webhook', 'controller'] });

it('the webhook waits for the Secret the controller makes later, then serves', async () => {
  const webhook = await install.resumeWebhook({ waitReady: false });
  const waiting = await webhook.waitForLog('waiting for the serving certificate', {
    timeoutMs: 30_000,
  });
  expect(waiting).toContain(`Secret ${install.system}/`);
  // Alive and honest while it waits: live, not ready, still running.
  expect((await probe(install.webhookHealthUrl)).status).toBe(200);
  expect((await probe(install.webhookReadyUrl)).status).toBe(503);
  expect(webhook.exitStatus).toBeUndefined();

  await install.startController('outrigger-controller', install.selfManagedCertificateArgs());
  await webhook.waitForUrl(install.webhookReadyUrl, { timeoutMs: 60_000 });
  await webhook.waitForLog('outrigger-webhook serving');
  // The API server reaches it through the caBundle the controller wrote: pods are injected.
  await install.waitForWebhookCalls();
});
