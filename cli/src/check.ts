// What one check of `outrigger check` is: a function of the cluster's context that passes with
// a detail, or fails with a detail and a hint that says what to do.

import type { KubeApi } from '@outrigger/kube';

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

/** An entry of the MutatingWebhookConfiguration, as much of it as the checks read. */
export interface WebhookEntry {
  name: string;
  clientConfig: { url?: string; caBundle?: string };
}

export interface Ctx {
  api: KubeApi;
  /** The API server's address, as the kubeconfig gives it. */
  server: string;
  namespace: string;
  configMap: string;
  probeNamespace: string;
  webhookConfiguration: string;
  webhook?: WebhookEntry[];
}

export type Check = (ctx: Ctx) => Promise<Omit<CheckResult, 'name'>>;

export const pass = (detail: string) => ({ ok: true, detail });
export const fail = (detail: string, hint: string) => ({ ok: false, detail, hint });
