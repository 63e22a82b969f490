// What one check of `outrigger check` is: a function of the cluster's context that passes with
// a detail, or fails with a detail and a hint that says what to do.

import type { KubeConfig, V1MutatingWebhook } from '@kubernetes/client-node';

export interface CheckResult {
  name: string;
  ok: boolean;
  detail: string;
  hint?: string;
}

export interface Ctx {
  kc: KubeConfig;
  namespace: string;
  configMap: string;
  probeNamespace: string;
  webhookConfiguration: string;
  webhook?: V1MutatingWebhook[];
}

export type Check = (ctx: Ctx) => Promise<Omit<CheckResult, 'name'>>;

export const pass = (detail: string) => ({ ok: true, detail });
export const fail = (detail: string, hint: string) => ({ ok: false, detail, hint });
