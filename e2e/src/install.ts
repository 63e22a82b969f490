// Outrigger installed for a test from manifests/install.yaml (rendered from the Helm chart): its
// namespace, the ConfigMap, each component's ServiceAccount and RBAC as they ship (only the
// namespace and the cluster-wide names made this run's own), the webhook and controller
// binaries as processes running with only their own account's rights (kwok runs no images), and
// the shipped webhook configuration pointing at the webhook by URL. Every webhook entry also
// requires this run's namespace label, so other runs sharing the cluster are never touched.

import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { type KubernetesObject, type V1ConfigMap } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  CONFIG_MAP_NAME,
  CONTROLLER_SERVICE_ACCOUNT,
  ENABLED,
  INJECT,
  INJECTION_LABEL,
  REVISION,
  TLS_SECRET_NAME,
  WEBHOOK_SERVICE_ACCOUNT,
} from '@outrigger/shared';
import { isConflict } from '@outrigger/kube';
import { freePort } from '@outrigger/testkit';
import { apply, remove } from './apply';
import { MERGE_PATCH, type Cluster } from './cluster';
import { webhookHost } from './environment';
import { createNamespace, deleteNamespace } from './namespace';
import { RUN_LABEL, rbacManifests, webhookConfiguration } from './run-manifests';
import { repoRoot } from './paths';
import { startProcess, type ManagedProcess } from './process';
import { writeServiceAccountKubeConfig } from './service-account';
import { makeServingCert, type ServingCert } from './tls';
import { done, pending, waitFor } from './wait';

const WEBHOOK_BIN = path.join(repoRoot, 'webhook', 'bin', 'outrigger-webhook.js');
const CONTROLLER_BIN = path.join(repoRoot, 'controller', 'bin', 'outrigger-controller.js');

export interface InstallOptions {
  /** The injector configuration (config.yaml) to start with. */
  configYaml: string;
  /** Prefix of the system namespace's name. */
  prefix?: string;
  /**
   * The controller keeps the webhook's certificate (in the Secret the webhook reads) and the
   * caBundle. setup() then starts no webhook: start the controller with
   * selfManagedCertificateArgs(), then resumeWebhook() and waitForWebhookCalls().
   */
  selfManagedCertificates?: boolean;
}

export interface ControllerProcess {
  process: ManagedProcess;
  metricsPort: number;
}

/** One test file's Outrigger. */
export class TestInstall {
  readonly run = randomBytes(4).toString('hex');
  system = '';
  /** An opted-in namespace the install uses to see that the API server calls the webhook. */
  private probeNamespace = '';
  private readonly namespaces: string[] = [];
  private readonly clusterObjects: KubernetesObject[] = [];
  private webhookArgs: string[] = [];
  /** The port of the webhook's metrics and probes server, once it started. */
  webhookMetricsPort = 0;
  private cert: ServingCert | undefined;
  webhook: ManagedProcess | undefined;
  private controllerKubeconfig = '';
  private readonly controllers: ControllerProcess[] = [];

  constructor(
    readonly cluster: Cluster,
    private readonly options: InstallOptions,
  ) {}

  /** A namespace of this run, opted in by the admin's annotation when asked. */
  async newNamespace(
    prefix: string,
    options: { optedIn?: boolean; labels?: Record<string, string> } = {},
  ) {
    const name = await createNamespace(this.cluster, {
      prefix,
      labels: { ...options.labels, [RUN_LABEL]: this.run },
      annotations: options.optedIn ? { [INJECT]: ENABLED } : undefined,
    });
    this.namespaces.push(name);
    return name;
  }

  get webhookReadyUrl(): string {
    return `http://127.0.0.1:${this.webhookMetricsPort}/readyz`;
  }

  async setup(): Promise<void> {
    this.system = await this.newNamespace(this.options.prefix ?? 'outrigger-system');
    await this.setConfig(this.options.configYaml);
    const objects = [
      ...rbacManifests('webhook', this.system, this.run),
      ...rbacManifests('controller', this.system, this.run),
    ];
    this.clusterObjects.push(...objects.filter((o) => !o.metadata?.namespace));
    await apply(this.cluster, objects);
    this.controllerKubeconfig = (
      await writeServiceAccountKubeConfig(this.cluster, {
        namespace: this.system,
        name: CONTROLLER_SERVICE_ACCOUNT,
      })
    ).path;
    await this.startWebhook();
  }

  async setConfig(configYaml: string): Promise<void> {
    const configMap: V1ConfigMap = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONFIG_MAP_NAME, namespace: this.system },
      data: { [CONFIG_MAP_KEY]: configYaml },
    };
    await apply(this.cluster, configMap);
  }

  /**
   * Replaces the ConfigMap's whole data, as an admin who misspells its key would write it (an
   * apply would keep the keys other managers, the chart's, own).
   */
  async setConfigData(data: Record<string, string>): Promise<void> {
    const ref = { name: CONFIG_MAP_NAME, namespace: this.system };
    // The controller writes the ConfigMap's annotations too: a conflict is read again.
    for (let attempt = 1; ; attempt++) {
      const current = await this.cluster.core.readNamespacedConfigMap(ref);
      try {
        await this.cluster.core.replaceNamespacedConfigMap({ ...ref, body: { ...current, data } });
        return;
      } catch (err) {
        if (!isConflict(err) || attempt >= 5) throw err;
      }
    }
  }

  /** A merge patch of the ConfigMap's annotations (null removes one), as an admin would. */
  async annotateConfig(annotations: Record<string, string | null>): Promise<void> {
    await this.cluster.core.patchNamespacedConfigMap(
      { name: CONFIG_MAP_NAME, namespace: this.system, body: { metadata: { annotations } } },
      MERGE_PATCH,
    );
  }

  private async startWebhook(): Promise<void> {
    const host = webhookHost();
    const selfManaged = this.options.selfManagedCertificates === true;
    this.cert = selfManaged ? undefined : await makeServingCert({ hosts: [host], days: 30 });
    const [port, metricsPort] = await Promise.all([freePort(host), freePort()]);
    this.webhookMetricsPort = metricsPort;
    const kubeconfig = (
      await writeServiceAccountKubeConfig(this.cluster, {
        namespace: this.system,
        name: WEBHOOK_SERVICE_ACCOUNT,
      })
    ).path;
    const tls = this.cert
      ? ['--tls-cert-file', this.cert.certFile, '--tls-key-file', this.cert.keyFile]
      : ['--tls-secret', `${this.system}/${TLS_SECRET_NAME}`];
    // prettier-ignore
    this.webhookArgs = [
      WEBHOOK_BIN,
      '--listen', `${host}:${port}`,
      '--metrics-listen', `127.0.0.1:${metricsPort}`,
      ...tls,
      '--config-map', `${this.system}/${CONFIG_MAP_NAME}`,
      '--system-namespace', this.system,
      '--kubeconfig', kubeconfig,
      '--shutdown-delay-seconds', '0',
      '--log-level', 'debug',
    ];
    const configuration = webhookConfiguration({
      name: this.webhookConfigurationName,
      url: `https://${host}:${port}`,
      caBundle: this.cert?.caBundle ?? '',
      system: this.system,
      run: this.run,
    });
    this.clusterObjects.push(configuration);
    await apply(this.cluster, configuration);
    // Self-managed: the controller must make the certificate before the webhook can serve.
    if (selfManaged) return;
    await this.resumeWebhook();
    await this.waitForWebhookCalls();
  }

  /** The controller's flags for self-managed certificates, for this run's names. */
  selfManagedCertificateArgs(
    options: {
      certValiditySeconds?: number;
      caValiditySeconds?: number;
      caGraceSeconds?: number;
    } = {},
  ): string[] {
    // prettier-ignore
    return [
      '--webhook-certificates', 'self-managed',
      '--webhook-configuration', this.webhookConfigurationName,
      '--webhook-cert-hosts', webhookHost(),
      ...(options.certValiditySeconds ? ['--cert-validity-seconds', String(options.certValiditySeconds)] : []),
      ...(options.caValiditySeconds ? ['--ca-validity-seconds', String(options.caValiditySeconds)] : []),
      ...(options.caGraceSeconds ? ['--ca-grace-seconds', String(options.caGraceSeconds)] : []),
    ];
  }

  /** The name of this run's MutatingWebhookConfiguration. */
  get webhookConfigurationName(): string {
    return `outrigger-e2e-${this.run}`;
  }

  /** Stops the webhook process (the configuration stays: pods then pass by it). */
  async stopWebhook(): Promise<void> {
    await this.webhook?.stop();
    this.webhook = undefined;
  }

  /**
   * Starts the webhook (again, on the same address), by default waiting until it is ready; a
   * start that should wait for something, such as its certificate, passes `waitReady: false`.
   */
  async resumeWebhook(options: { waitReady?: boolean } = {}): Promise<ManagedProcess> {
    this.webhook = await startProcess({
      name: 'outrigger-webhook',
      command: process.execPath,
      args: this.webhookArgs,
      ready: options.waitReady === false ? undefined : { url: this.webhookReadyUrl },
    });
    return this.webhook;
  }

  /** The webhook's /healthz URL, beside its /readyz. */
  get webhookHealthUrl(): string {
    return `http://127.0.0.1:${this.webhookMetricsPort}/healthz`;
  }

  /** The API server picks a new configuration up within a second or so: a dry run shows when. */
  async waitForWebhookCalls(): Promise<void> {
    this.probeNamespace = await this.newNamespace('webhook-probe', {
      labels: { [INJECTION_LABEL]: ENABLED },
      optedIn: true,
    });
    await waitFor('the API server to call the outrigger webhook', async () => {
      const pod = await this.cluster.core.createNamespacedPod({
        namespace: this.probeNamespace,
        body: {
          metadata: { name: 'probe' },
          spec: { containers: [{ name: 'app', image: 'registry.k8s.io/pause:3.10' }] },
        },
        dryRun: 'All',
      });
      return pod.metadata?.labels?.[REVISION]
        ? done(undefined)
        : pending({ labels: pod.metadata?.labels, webhookLog: this.webhook?.tail(5) });
    });
  }

  /**
   * Starts a controller replica as the controller's ServiceAccount; `node` flags (a benchmark's
   * --inspect) go before the program, and `env` is added to its environment.
   */
  async startController(
    name = 'outrigger-controller',
    extra: string[] = [],
    node: string[] = [],
    env: Record<string, string> = {},
  ): Promise<ControllerProcess> {
    const metricsPort = await freePort();
    // prettier-ignore
    const args = [
      ...node,
      CONTROLLER_BIN,
      '--kubeconfig', this.controllerKubeconfig,
      '--namespace', this.system,
      '--metrics-listen', `127.0.0.1:${metricsPort}`,
      '--webhook-ready-url', this.webhookReadyUrl,
      '--log-level', 'debug',
      ...extra,
    ];
    const started = {
      process: await startProcess({
        name,
        command: process.execPath,
        args,
        env,
        ready: { url: `http://127.0.0.1:${metricsPort}/readyz` },
      }),
      metricsPort,
    };
    this.controllers.push(started);
    return started;
  }

  /** Removes the webhook configuration first, so nothing calls a webhook that is going away. */
  async teardown(): Promise<void> {
    await remove(this.cluster, this.clusterObjects).catch((e: unknown) => console.warn(e));
    for (const c of this.controllers) await c.process.stop();
    await this.webhook?.stop();
    await Promise.all(this.namespaces.map((ns) => deleteNamespace(this.cluster, ns)));
  }

  get allNamespaces(): readonly string[] {
    return this.namespaces;
  }
}
