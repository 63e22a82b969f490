// The shipped manifests (manifests/install.yaml, rendered from the Helm chart) made one test
// run's own: the webhook configuration calls the run's webhook by URL and touches only the run's
// namespaces, and the RBAC objects live in the run's namespace under cluster-wide names of its own.

import { readFileSync } from 'node:fs';
import type { V1MutatingWebhookConfiguration } from '@kubernetes/client-node';
import { SYSTEM_NAMESPACE, WEBHOOK_CONFIGURATION_NAME } from '@outrigger/shared';
import { installYamlPath } from '@outrigger/testkit';
import { parseManifests, type Manifest } from './apply';

/** The namespace label that marks a namespace as one run's: the run's webhook requires it. */
export const RUN_LABEL = 'e2e.outrigger.dev/run';

export interface WebhookConfigurationOptions {
  name: string;
  /** https://host:port of the webhook. */
  url: string;
  caBundle: string;
  /** Outrigger's own namespace, excluded like the Kubernetes system namespaces. */
  system: string;
  /** The run's namespace label every entry also requires. */
  run: string;
  failurePolicy?: 'Ignore' | 'Fail';
}

/** manifests/install.yaml, rendered from the Helm chart: what ships, and what is tested. */
export function installManifests(): Manifest[] {
  return parseManifests(readFileSync(installYamlPath(), 'utf8'));
}

type Selector = { matchExpressions?: { key: string; operator: string; values?: string[] }[] };

interface WebhookEntry {
  name: string;
  clientConfig: { url?: string; service?: { path?: string }; caBundle?: string };
  namespaceSelector?: Selector;
  failurePolicy?: string;
}

/** An entry of the shipped configuration, pointed at a webhook by URL, for this run only. */
function adaptEntry(entry: WebhookEntry, options: WebhookConfigurationOptions): WebhookEntry {
  const selector = entry.namespaceSelector ?? {};
  const expressions = (selector.matchExpressions ?? []).map((e) => ({
    ...e,
    values: e.values?.map((v) => (v === SYSTEM_NAMESPACE ? options.system : v)),
  }));
  expressions.push({ key: RUN_LABEL, operator: 'In', values: [options.run] });
  return {
    ...entry,
    clientConfig: {
      url: `${options.url}${entry.clientConfig.service?.path ?? ''}`,
      caBundle: options.caBundle,
    },
    namespaceSelector: { ...selector, matchExpressions: expressions },
    ...(options.failurePolicy && entry.failurePolicy !== 'Ignore'
      ? { failurePolicy: options.failurePolicy }
      : {}),
  };
}

/**
 * The MutatingWebhookConfiguration of manifests/install.yaml, with three changes for a test: it
 * calls the webhook by URL with the test's CA, excludes the test's system namespace instead of
 * outrigger-system, and requires this run's namespace label, so other runs sharing the cluster
 * (and a real install) are never touched by this run's webhook.
 */
export function webhookConfiguration(
  options: WebhookConfigurationOptions,
): V1MutatingWebhookConfiguration {
  const shipped = installManifests().find((m) => m.kind === 'MutatingWebhookConfiguration');
  if (!shipped) throw new Error('manifests/install.yaml has no MutatingWebhookConfiguration');
  const copy = JSON.parse(JSON.stringify(shipped)) as Manifest & { webhooks: WebhookEntry[] };
  return {
    ...copy,
    metadata: { name: options.name },
    webhooks: copy.webhooks.map((entry) => adaptEntry(entry, options)),
  } as V1MutatingWebhookConfiguration;
}

/**
 * The component's ServiceAccount and RBAC from manifests/install.yaml, made this run's: the
 * namespace replaced, and the cluster-wide names suffixed so two runs (or a run and a real
 * install) never share a ClusterRole.
 */
export function rbacManifests(
  component: 'controller' | 'webhook',
  system: string,
  run: string,
): Manifest[] {
  const name = `outrigger-${component}`;
  const kinds = ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding'];
  return installManifests()
    .filter((m) => kinds.includes(m.kind ?? '') && m.metadata?.name === name)
    .map((m) => forRun(m, system, run));
}

type RbacObject = Manifest & {
  roleRef?: { kind: string; name: string };
  subjects?: { namespace?: string }[];
  rules?: { resources?: string[]; resourceNames?: string[] }[];
};

/** One shipped RBAC object made this run's. */
function forRun(manifest: Manifest, system: string, run: string): RbacObject {
  const o = JSON.parse(JSON.stringify(manifest)) as RbacObject;
  const meta = o.metadata ?? {};
  const local = (ns: string | undefined) => (ns === SYSTEM_NAMESPACE ? system : ns);
  meta.namespace = local(meta.namespace);
  if (o.kind === 'ClusterRole' || o.kind === 'ClusterRoleBinding')
    meta.name = `${meta.name}-${run}`;
  if (o.roleRef?.kind === 'ClusterRole') o.roleRef.name = `${o.roleRef.name}-${run}`;
  for (const s of o.subjects ?? []) s.namespace = local(s.namespace);
  for (const rule of o.rules ?? []) ownConfiguration(rule, run);
  return o;
}

/** The webhook configuration the controller may keep the caBundle of is this run's. */
function ownConfiguration(rule: { resources?: string[]; resourceNames?: string[] }, run: string) {
  if (!rule.resources?.includes('mutatingwebhookconfigurations')) return;
  rule.resourceNames = rule.resourceNames?.map((n) =>
    n === WEBHOOK_CONFIGURATION_NAME ? `outrigger-e2e-${run}` : n,
  );
}
