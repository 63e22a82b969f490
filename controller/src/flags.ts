// The controller's command-line flags (conventions in kube/src/flags.ts: each is also an
// environment variable, the command line wins, errors name the fix).

import {
  FlagError,
  envName,
  namingTheVariable,
  oneOf,
  parseAddress,
  parseRef,
  readFlags,
  type ListenAddress,
  type ObjectRef,
} from '@outrigger/kube';
import {
  POLICY_API_VERSIONS,
  CONFIG_MAP_NAME,
  LEASE_NAME,
  SYSTEM_NAMESPACE,
  WEBHOOK_CONFIGURATION_NAME,
  WEBHOOK_SERVICE,
} from '@outrigger/shared';
import type { PolicyFlags } from './policies/policy-keeper';

export type { PolicyFlags };

export interface CertificateFlags {
  /** The MutatingWebhookConfiguration whose entries get the caBundle. */
  webhookConfiguration: string;
  /** Names the serving certificate is for: the Service's, and any --webhook-cert-hosts. */
  hosts: string[];
  caValiditySeconds: number;
  certValiditySeconds: number;
  caGraceSeconds: number;
}

export interface ControllerFlags {
  kubeconfig?: string;
  /** The controller's own namespace: never labelled, holds the Lease. */
  namespace: string;
  configMap: ObjectRef;
  metricsListen: ListenAddress;
  leaderElect: boolean;
  leaseName: string;
  logLevel: 'error' | 'warn' | 'info' | 'debug';
  /** The global limit on API writes: tokens a second, and the burst. */
  writeQps: number;
  writeBurst: number;
  /** Self-managed: the controller keeps the webhook's CA, certificate and caBundle. */
  certificates?: CertificateFlags;
  /** The webhook's readiness URL; heals of escaped pods wait until it answers 2xx. */
  webhookReadyUrl?: string;
  /** The admission-policy mode (policy or both): the policies to keep. */
  policies?: PolicyFlags;
}

const DEFAULTS: Record<string, string> = {
  namespace: SYSTEM_NAMESPACE,
  'metrics-listen': ':9091',
  'leader-elect': 'true',
  'lease-name': LEASE_NAME,
  'log-level': 'info',
  'write-qps': '20',
  'write-burst': '50',
  'webhook-certificates': 'none',
  'webhook-configuration': WEBHOOK_CONFIGURATION_NAME,
  'webhook-service': WEBHOOK_SERVICE,
  'ca-validity-seconds': String(365 * 86_400),
  'cert-validity-seconds': String(90 * 86_400),
  'ca-grace-seconds': '120',
  'admission-mode': 'webhook',
  'policy-api-version': 'admissionregistration.k8s.io/v1beta1',
  'policy-failure-policy': 'Fail',
  'policy-owner': 'outrigger-controller',
};
const NAMES = [
  ...Object.keys(DEFAULTS),
  'kubeconfig',
  'config-map',
  'webhook-ready-url',
  'webhook-cert-hosts',
];

function parseNumber(
  flag: string,
  value: string,
  limits: { integer: boolean; max: number },
): number {
  const n = Number(value);
  if (
    value.trim() === '' ||
    !Number.isFinite(n) ||
    n < 1 ||
    n > limits.max ||
    (limits.integer && !Number.isInteger(n))
  )
    throw new FlagError(
      `--${flag} must be a ${limits.integer ? 'whole ' : ''}number from 1 to ${limits.max}, such as --${flag}=${DEFAULTS[flag]}; got ${value}`,
    );
  return n;
}

function parseBool(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new FlagError(`--${flag} must be true or false, such as --${flag}=false; got ${value}`);
}

/** Raw values: command line, then environment, then defaults. A bare --leader-elect is true. */
function rawValues(argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const args = argv.map((a) => (a === '--leader-elect' ? '--leader-elect=true' : a));
  return readFlags(args, env, { names: NAMES, defaults: DEFAULTS, usage: USAGE });
}

export function parseFlags(argv: string[], env: NodeJS.ProcessEnv = {}): ControllerFlags {
  return namingTheVariable(argv, env, () => flagValues(argv, env));
}

function flagValues(argv: string[], env: NodeJS.ProcessEnv): ControllerFlags {
  const v = rawValues(argv, env);
  const get = (f: string): string => v[f] ?? '';
  const namespace = get('namespace');
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(namespace))
    throw new FlagError(`--namespace must be a namespace name; got ${JSON.stringify(namespace)}`);
  const flags: ControllerFlags = {
    namespace,
    configMap: parseRef('config-map', v['config-map'] ?? `${namespace}/${CONFIG_MAP_NAME}`),
    metricsListen: parseAddress('metrics-listen', get('metrics-listen')),
    leaderElect: parseBool('leader-elect', get('leader-elect')),
    leaseName: get('lease-name'),
    logLevel: oneOf('log-level', get('log-level'), ['error', 'warn', 'info', 'debug'] as const),
    writeQps: parseNumber('write-qps', get('write-qps'), { integer: false, max: 10_000 }),
    writeBurst: parseNumber('write-burst', get('write-burst'), { integer: true, max: 10_000 }),
  };
  if (v.kubeconfig) flags.kubeconfig = v.kubeconfig;
  const url = v['webhook-ready-url'];
  if (url) {
    if (!/^https?:\/\/[^/\s]+/.test(url))
      throw new FlagError(
        `--webhook-ready-url must be an http(s) URL such as http://outrigger-webhook.outrigger-system.svc:9090/readyz; got ${url}`,
      );
    flags.webhookReadyUrl = url;
  }
  const certificates = certificateFlags(get, namespace);
  if (certificates) flags.certificates = certificates;
  const mode = oneOf('admission-mode', get('admission-mode'), [
    'webhook',
    'policy',
    'both',
  ] as const);
  if (mode !== 'webhook')
    flags.policies = {
      mode,
      apiVersion: oneOf('policy-api-version', get('policy-api-version'), POLICY_API_VERSIONS),
      failurePolicy: oneOf('policy-failure-policy', get('policy-failure-policy'), [
        'Fail',
        'Ignore',
      ] as const),
      ownerClusterRole: get('policy-owner'),
    };
  return flags;
}

function certificateFlags(
  get: (f: string) => string,
  namespace: string,
): CertificateFlags | undefined {
  const mode = oneOf('webhook-certificates', get('webhook-certificates'), [
    'none',
    'self-managed',
  ] as const);
  if (mode === 'none') return undefined;
  const service = get('webhook-service');
  const extra = get('webhook-cert-hosts')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  const seconds = (flag: string) =>
    parseNumber(flag, get(flag), { integer: true, max: 10 * 365 * 86_400 });
  const caValiditySeconds = seconds('ca-validity-seconds');
  const caGraceSeconds = seconds('ca-grace-seconds');
  // A CA is renewed with a third of its life left, and the old one signs the served
  // certificate until the grace has passed: that third must outlast the grace, with room.
  if (caValiditySeconds < 4 * caGraceSeconds)
    throw new FlagError(
      `--ca-validity-seconds (${caValiditySeconds}) must be at least 4 times --ca-grace-seconds (${caGraceSeconds}): a CA is renewed with a third of its life left, and the old one must stay valid through the grace`,
    );
  return {
    webhookConfiguration: get('webhook-configuration'),
    hosts: [`${service}.${namespace}.svc`, `${service}.${namespace}.svc.cluster.local`, ...extra],
    caValiditySeconds,
    certValiditySeconds: seconds('cert-validity-seconds'),
    caGraceSeconds,
  };
}

export const USAGE = `Usage: outrigger-controller [flags]   (each flag is also an environment variable, e.g. --config-map is ${envName('config-map')})

  --kubeconfig PATH             API access (default: in-cluster)
  --namespace NAME              the namespace Outrigger runs in: never labelled, holds the Lease (default outrigger-system)
  --config-map NAMESPACE/NAME   the injector configuration (default <namespace>/outrigger-config)
  --metrics-listen HOST:PORT    plain HTTP /metrics, /healthz, /readyz (default :9091)
  --leader-elect true|false     elect a leader on a Lease; only the leader writes (default true)
  --lease-name NAME             the Lease in --namespace (default outrigger-controller)
  --write-qps N                 API writes a second at most, all kinds together (default 20)
  --write-burst N               writes allowed at once above that rate (default 50)
  --webhook-ready-url URL       the webhook's /readyz; heals of escaped pods wait until it answers (default: heal without asking)
  --webhook-certificates none|self-managed
                                self-managed: keep the webhook's CA and serving certificate in Secrets
                                outrigger-webhook-ca and outrigger-webhook-tls, and the CA in every caBundle (default none)
  --webhook-configuration NAME  the MutatingWebhookConfiguration to keep the caBundle of (default outrigger)
  --webhook-service NAME        the webhook's Service in --namespace, the certificate's name (default outrigger-webhook)
  --webhook-cert-hosts H,H      more DNS names or IPs for the serving certificate
  --ca-validity-seconds N       the CA's lifetime (default 1 year); both renew with a third left
  --cert-validity-seconds N     the serving certificate's lifetime (default 90 days)
  --ca-grace-seconds N          a new CA is trusted this long before the certificate moves to it (default 120)
  --admission-mode webhook|policy|both
                                policy: keep a MutatingAdmissionPolicy for every set at each revision in use, so the
                                API server injects pods by itself; both: the same, pods asking for overrides left to the
                                webhook (default webhook: no policies)
  --policy-api-version V        the API the policies are written in: admissionregistration.k8s.io/v1 (Kubernetes 1.36)
                                or admissionregistration.k8s.io/v1beta1 (1.34 and 1.35, with the feature gate) (default v1beta1)
  --policy-failure-policy Fail|Ignore
                                what the API server does when a policy cannot be evaluated (default Fail)
  --policy-owner NAME           the ClusterRole that owns the policies: deleting it (uninstalling) deletes them (default outrigger-controller)
  --log-level error|warn|info|debug`;

export { FlagError };
