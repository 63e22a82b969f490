// The controller's command-line flags (conventions in kube/src/flags.ts: each is also an
// environment variable, the command line wins, errors name the fix).

import {
  FlagError,
  envName,
  oneOf,
  parseAddress,
  parseRef,
  readFlags,
  type ListenAddress,
  type ObjectRef,
} from '@outrigger/kube';
import { CONFIG_MAP_NAME, LEASE_NAME, SYSTEM_NAMESPACE } from '@outrigger/shared';

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
  /** The webhook's readiness URL; heals of escaped pods wait until it answers 2xx. */
  webhookReadyUrl?: string;
}

const DEFAULTS: Record<string, string> = {
  namespace: SYSTEM_NAMESPACE,
  'metrics-listen': ':9091',
  'leader-elect': 'true',
  'lease-name': LEASE_NAME,
  'log-level': 'info',
  'write-qps': '20',
  'write-burst': '50',
};
const NAMES = [...Object.keys(DEFAULTS), 'kubeconfig', 'config-map', 'webhook-ready-url'];

function parseNumber(flag: string, value: string, o: { integer: boolean; max: number }): number {
  const n = Number(value);
  if (
    value.trim() === '' ||
    !Number.isFinite(n) ||
    n < 1 ||
    n > o.max ||
    (o.integer && !Number.isInteger(n))
  )
    throw new FlagError(
      `--${flag} must be a ${o.integer ? 'whole ' : ''}number from 1 to ${o.max}, such as --${flag}=${DEFAULTS[flag]}; got ${value}`,
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
  return flags;
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
  --log-level error|warn|info|debug`;

export { FlagError };
