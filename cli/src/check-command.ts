// `outrigger check`: is the install healthy? One line per check, a hint for each failure, exit 1
// when any fails. Like `linkerd check`, it walks the path a pod takes: the API server, the
// configuration, the components and their rights, the webhook configuration and certificate,
// and finally a dry-run pod that the API server must send through the webhook.

import {
  CONFIG_MAP_KEY,
  CONTROLLER_SERVICE_ACCOUNT,
  ENABLED,
  INJECT,
  LEASE_NAME,
  REVISION,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_SERVICE_ACCOUNT,
  readConfigMap,
  type PodLike,
} from '@outrigger/shared';
import {
  LeaseTimeError,
  apiErrorMessage,
  httpStatus,
  leaseIsFree,
  leaseRenewedMs,
  leasesPath,
  workloadPath,
  type Lease,
} from '@outrigger/kube';
import { VERSION_PATH, configMapPath, podsPath, webhookConfigurationPath } from './api-paths';
import { clusterFlags, connectCluster, FLEET_FLAGS, parseClusterArgs } from './cluster-flags';
import { UsageError, type Io } from './io';
import { fail, pass, type Check, type CheckResult, type Ctx, type WebhookEntry } from './check';
import { certificateTrusted } from './check-certificate';
import { rbacSufficient } from './check-rbac';
import { policiesInForce } from './check-policies';

export const CHECK_USAGE = `Usage: outrigger check [--probe-namespace NAME] [--webhook-configuration NAME]
       is the install healthy? One line per check, a hint for each failure; exit 1 when one fails.
       The last check creates a dry-run pod in --probe-namespace (default: default).`;

/** The oldest Kubernetes release Outrigger is tested against the ideas of (native sidecars: 1.29). */
const MIN_MINOR = 29;

const message = apiErrorMessage;

/** As much of a Deployment as the components check reads. */
interface Deployment {
  spec?: { replicas?: number };
  status?: { readyReplicas?: number };
}

const apiReachable: Check = async ({ api, server }) => {
  const v = await api.get<{ minor: string; gitVersion: string }>(VERSION_PATH);
  const minor = Number.parseInt(v.minor, 10);
  if (!(minor >= MIN_MINOR))
    return fail(
      `Kubernetes ${v.gitVersion}`,
      `Outrigger needs Kubernetes 1.${MIN_MINOR} or later (native sidecars)`,
    );
  return pass(`Kubernetes ${v.gitVersion} at ${server}`);
};

const configValid: Check = async ({ api, namespace, configMap }) => {
  const cm = await api.get<{ data?: Record<string, string> }>(configMapPath(namespace, configMap));
  const reading = readConfigMap(cm, { namespace, name: configMap });
  if (!('ok' in reading))
    return fail(
      reading.message,
      `fix ${CONFIG_MAP_KEY} (npx outrigger config validate FILE lists every error); the components keep the last good configuration meanwhile`,
    );
  return pass(`ConfigMap ${namespace}/${configMap} is valid`);
};

/** The webhook's Deployment, unless the webhook configuration calls it by URL (outside). */
const componentsReady: Check = async (ctx) => {
  const byUrl = ctx.webhook?.some((w) => w.clientConfig.url);
  const names = byUrl
    ? [CONTROLLER_SERVICE_ACCOUNT]
    : [WEBHOOK_SERVICE_ACCOUNT, CONTROLLER_SERVICE_ACCOUNT];
  const details: string[] = [];
  for (const name of names) {
    try {
      const d = await ctx.api.get<Deployment>(workloadPath('Deployment', ctx.namespace, name));
      const ready = d.status?.readyReplicas ?? 0;
      if (ready < 1)
        return fail(
          `Deployment ${ctx.namespace}/${name}: no ready replica`,
          `kubectl -n ${ctx.namespace} describe deployment ${name}; kubectl -n ${ctx.namespace} logs deployment/${name}`,
        );
      details.push(`${name} ${ready}/${d.spec?.replicas ?? 1}`);
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
      // The webhook called through its Service must run in the cluster; a controller may run
      // elsewhere (the Lease check says whether one leads).
      if (name === WEBHOOK_SERVICE_ACCOUNT)
        return fail(
          `no Deployment ${ctx.namespace}/${name}`,
          'the webhook configuration calls the webhook through its Service, but the webhook is not installed: install Outrigger again (docs/install.md)',
        );
      details.push(`${name} runs outside the cluster`);
    }
  }
  return pass(details.join(', '));
};

const leaderPresent: Check = async ({ api, namespace }) => {
  try {
    const lease = await api.get<Lease>(leasesPath(namespace, LEASE_NAME));
    const nowMs = Date.now();
    if (leaseIsFree(lease, nowMs))
      return fail(
        `Lease ${namespace}/${LEASE_NAME} has no live holder`,
        'no controller replica leads: check that one runs (its logs say why it does not lead)',
      );
    const renewed = leaseRenewedMs(lease) ?? nowMs;
    return pass(
      `${lease.spec?.holderIdentity ?? ''} leads (renewed ${Math.round((nowMs - renewed) / 1000)} s ago)`,
    );
  } catch (err) {
    if (err instanceof LeaseTimeError)
      return fail(err.message, 'no controller can take a Lease whose times do not parse');
    if (httpStatus(err) !== 404) throw err;
    return fail(
      `no Lease ${namespace}/${LEASE_NAME}`,
      'the controller has never run: start it (a Deployment in the install)',
    );
  }
};

const webhookConfigured: Check = async (ctx) => {
  try {
    const c = await ctx.api.get<{ webhooks?: WebhookEntry[] }>(
      webhookConfigurationPath(ctx.webhookConfiguration),
    );
    ctx.webhook = c.webhooks ?? [];
  } catch (err) {
    if (httpStatus(err) !== 404) throw err;
    return fail(
      `no MutatingWebhookConfiguration ${ctx.webhookConfiguration}`,
      'install Outrigger (docs/install.md): without it no pod is injected',
    );
  }
  const empty = ctx.webhook.filter((w) => !w.clientConfig.caBundle).map((w) => w.name);
  if (empty.length > 0)
    return fail(
      `no caBundle in ${empty.join(', ')}`,
      'the API server cannot trust the webhook: set certificates.caBundle, or use certificates.mode=cert-manager',
    );
  return pass(`${ctx.webhook.length} entries, each with a caBundle`);
};

/** The whole path: the API server must send a pod through the webhook and get it injected. */
const webhookAnswering: Check = async ({ api, probeNamespace }) => {
  let pod: PodLike;
  try {
    pod = await api.create<PodLike>(
      podsPath(probeNamespace),
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { generateName: 'outrigger-check-', labels: { [INJECT]: ENABLED } },
        spec: { containers: [{ name: 'check', image: 'registry.k8s.io/pause:3.10' }] },
      },
      { dryRun: 'All' },
    );
  } catch (err) {
    return fail(
      `the dry-run pod was refused in ${probeNamespace}: ${message(err)}`,
      'pass --probe-namespace NAME: a namespace Outrigger may inject (not excluded) where a plain pod may be created',
    );
  }
  const revision = pod.metadata?.labels?.[REVISION];
  if (!revision)
    return fail(
      `a dry-run pod in ${probeNamespace} came back without the sidecar`,
      'the API server could not call the webhook (failurePolicy Ignore let the pod through): see the checks above, and the API server log for "failed calling webhook"',
    );
  return pass(`a dry-run pod in ${probeNamespace} was injected at revision ${revision}`);
};

const CHECKS: [string, Check][] = [
  ['API server reachable, version supported', apiReachable],
  ['configuration valid', configValid],
  ['webhook configuration present', webhookConfigured],
  ['components ready', componentsReady],
  ['controller leader present', leaderPresent],
  ['RBAC sufficient', rbacSufficient],
  ['serving certificate trusted and current', certificateTrusted],
  ['admission policies in force', policiesInForce],
  ['webhook answering', webhookAnswering],
];

export async function runChecks(ctx: Ctx): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const [name, check] of CHECKS) {
    try {
      results.push({ name, ...(await check(ctx)) });
    } catch (err) {
      results.push({
        name,
        ...fail(
          message(err),
          'the API call failed: is the kubeconfig right, and may it read this?',
        ),
      });
    }
    // Nothing further can be learned without the API server.
    if (name.startsWith('API') && !results[0]?.ok) break;
  }
  return results;
}

export async function checkCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseClusterArgs(args);
  if (positionals.length > 0)
    throw new UsageError(`check takes no arguments\n\n${CHECK_USAGE}\n${FLEET_FLAGS}`);
  const flags = clusterFlags(values);
  const results = await runChecks({
    ...connectCluster(flags),
    namespace: flags.configMap.namespace,
    configMap: flags.configMap.name,
    probeNamespace: values['probe-namespace'] ?? 'default',
    webhookConfiguration: values['webhook-configuration'] ?? WEBHOOK_CONFIGURATION_NAME,
  });
  for (const r of results) {
    io.stdout(`${r.ok ? '√' : '×'} ${r.name}: ${r.detail}\n`);
    if (r.hint) io.stdout(`    hint: ${r.hint}\n`);
  }
  const failed = results.filter((r) => !r.ok).length;
  io.stdout(failed === 0 ? '\nStatus check results are √\n' : `\n${failed} check(s) failed\n`);
  return failed === 0 ? 0 : 1;
}
