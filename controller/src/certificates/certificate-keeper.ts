// Self-managed certificates, the shell around certificates.ts: caches of the two Secrets and the
// webhook configuration (fed by watches), and a reconcile of one key that plans and writes.
// Writes carry the resourceVersion they were decided on (a create fails if the object appeared
// meanwhile), so a stale cache gets a conflict and a requeue, never a second CA.

import { X509Certificate } from 'node:crypto';
import { type V1MutatingWebhookConfiguration, type V1Secret } from '@kubernetes/client-node';
import { CA_SECRET_NAME, FIELD_MANAGER, TLS_SECRET_NAME, formatTime } from '@outrigger/shared';
import { httpStatus, isConflict, type KubeApi } from '@outrigger/kube';
import { ObjectCache } from '../watch/cache';
import {
  assertSignerInstalled,
  planCertificates,
  type CertificatePlan,
  type CertificatePolicy,
} from './certificates';
import type { CertificateFlags } from '../flags';
import type { Logger } from '../log';
import type { Result } from '../watch/queue';

export const CERTIFICATES_KEY = 'Certificates';
/** Looked at again at least this often, whatever the plan says. */
const MAX_RECHECK_MS = 60 * 60_000;
const CONFLICT_REQUEUE_MS = 1000;

export interface CertificateKeeperOptions {
  api: KubeApi;
  namespace: string;
  flags: CertificateFlags;
  logger: Logger;
  acquireWrite: () => Promise<void>;
  onWrite: (resource: string, verb: string) => void;
  clock?: () => number;
}

/** 422 from the bundle's JSON patch is its resourceVersion `test` failing: a conflict too. */
const isFailedTest = (err: unknown): boolean => httpStatus(err) === 422;

const decode = (b64: string | undefined): string =>
  Buffer.from(b64 ?? '', 'base64').toString('utf8');

function fingerprintOf(pem: string): string | undefined {
  try {
    return pem.includes('BEGIN CERTIFICATE') ? new X509Certificate(pem).fingerprint256 : undefined;
  } catch {
    return undefined;
  }
}

function bundleFingerprints(bundle: string | undefined): string[] {
  return decode(bundle)
    .split(/(?=-----BEGIN CERTIFICATE-----)/)
    .flatMap((pem) => fingerprintOf(pem) ?? []);
}

export class CertificateKeeper {
  readonly secrets = new ObjectCache<V1Secret>();
  readonly webhookConfigurations = new ObjectCache<V1MutatingWebhookConfiguration>();
  private readonly policy: CertificatePolicy;
  private readonly clock: () => number;
  private warnedMissing = false;
  private trusted: { fingerprint: string; sinceMs: number } | undefined;

  constructor(private readonly options: CertificateKeeperOptions) {
    assertSignerInstalled();
    this.clock = options.clock ?? Date.now;
    this.policy = {
      caValidityMs: options.flags.caValiditySeconds * 1000,
      servingValidityMs: options.flags.certValiditySeconds * 1000,
      caGraceMs: options.flags.caGraceSeconds * 1000,
      hosts: options.flags.hosts,
    };
  }

  get hasSynced(): boolean {
    return this.secrets.hasSynced && this.webhookConfigurations.hasSynced;
  }

  private secret(name: string): V1Secret | undefined {
    return this.secrets.get(`${this.options.namespace}/${name}`);
  }

  async reconcile(): Promise<Result> {
    const ca = this.secret(CA_SECRET_NAME);
    const tls = this.secret(TLS_SECRET_NAME);
    const config = this.webhookConfigurations.get(this.options.flags.webhookConfiguration);
    const nowMs = this.clock();
    const plan = planCertificates(
      {
        ca: ca?.data,
        tls: tls?.data,
        caBundles: Object.fromEntries(
          (config?.webhooks ?? []).map((w) => [w.name, w.clientConfig.caBundle]),
        ),
        bundleTrustedSinceMs: this.bundleTrustedSince(ca, config, nowMs),
        nowMs,
      },
      this.policy,
    );
    this.report(plan, config);
    try {
      if (plan.ca) await this.writeSecret(CA_SECRET_NAME, ca, plan.ca);
      if (config && plan.staleEntries.length > 0) await this.writeBundle(config, plan);
      if (plan.tls) await this.writeSecret(TLS_SECRET_NAME, tls, plan.tls);
    } catch (err) {
      // Anything else (a Secret of the wrong type, a validation error) is retried with
      // back-off by the queue, and logged.
      if (!isConflict(err)) throw err;
      return { requeueAfterMs: CONFLICT_REQUEUE_MS };
    }
    return { requeueAfterMs: Math.max(1000, Math.min(MAX_RECHECK_MS, plan.recheckAtMs - nowMs)) };
  }

  /**
   * Since when (as seen here) every entry's caBundle has held the CA in the CA Secret. Kept in
   * memory: a restarted controller starts the grace period again, which only delays a move.
   */
  private bundleTrustedSince(
    caSecret: V1Secret | undefined,
    config: V1MutatingWebhookConfiguration | undefined,
    nowMs: number,
  ): number | undefined {
    const fingerprint = fingerprintOf(decode(caSecret?.data?.['ca.crt']));
    const entries = config?.webhooks ?? [];
    const everywhere =
      fingerprint !== undefined &&
      entries.length > 0 &&
      entries.every((w) => bundleFingerprints(w.clientConfig.caBundle).includes(fingerprint));
    if (!everywhere) {
      this.trusted = undefined;
      return undefined;
    }
    if (this.trusted?.fingerprint !== fingerprint) this.trusted = { fingerprint, sinceMs: nowMs };
    return this.trusted.sinceMs;
  }

  private report(plan: CertificatePlan, config: V1MutatingWebhookConfiguration | undefined): void {
    if (plan.why.length > 0)
      this.options.logger.info('renewing the webhook certificates', {
        why: plan.why,
        next: formatTime(plan.recheckAtMs),
      });
    if (!config && !this.warnedMissing) {
      this.warnedMissing = true;
      this.options.logger.warn('no webhook configuration to give the caBundle to; waiting for it', {
        webhookConfiguration: this.options.flags.webhookConfiguration,
      });
    }
    if (config) this.warnedMissing = false;
  }

  private async writeSecret(
    name: string,
    current: V1Secret | undefined,
    data: Record<string, string>,
  ): Promise<void> {
    const { namespace } = this.options;
    await this.options.acquireWrite();
    const body: V1Secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace,
        labels: { 'app.kubernetes.io/managed-by': FIELD_MANAGER },
        ...(current?.metadata?.resourceVersion
          ? { resourceVersion: current.metadata.resourceVersion }
          : {}),
      },
      type: name === TLS_SECRET_NAME ? 'kubernetes.io/tls' : 'Opaque',
      data,
    };
    if (current) {
      this.options.onWrite('secrets', 'update');
      await this.options.api.replace(`/api/v1/namespaces/${namespace}/secrets/${name}`, body, {
        fieldManager: FIELD_MANAGER,
      });
    } else {
      this.options.onWrite('secrets', 'create');
      await this.options.api.create(`/api/v1/namespaces/${namespace}/secrets`, body, {
        fieldManager: FIELD_MANAGER,
      });
    }
    this.options.logger.info('wrote the webhook certificate Secret', {
      secret: `${namespace}/${name}`,
    });
  }

  /** A JSON patch of the stale entries' caBundle, guarded by the resourceVersion read. */
  private async writeBundle(
    config: V1MutatingWebhookConfiguration,
    plan: CertificatePlan,
  ): Promise<void> {
    const ops: object[] = [
      { op: 'test', path: '/metadata/resourceVersion', value: config.metadata?.resourceVersion },
    ];
    (config.webhooks ?? []).forEach((w, i) => {
      if (plan.staleEntries.includes(w.name))
        ops.push({ op: 'add', path: `/webhooks/${i}/clientConfig/caBundle`, value: plan.caBundle });
    });
    await this.options.acquireWrite();
    this.options.onWrite('mutatingwebhookconfigurations', 'patch');
    try {
      await this.options.api.patch(
        `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${config.metadata?.name ?? ''}`,
        ops,
        'json',
        { fieldManager: FIELD_MANAGER },
      );
    } catch (err) {
      if (isFailedTest(err))
        throw Object.assign(new Error('stale webhook configuration'), { code: 409 });
      throw err;
    }
    this.options.logger.info('wrote the caBundle into the webhook configuration', {
      webhookConfiguration: config.metadata?.name,
      entries: plan.staleEntries,
    });
  }
}
