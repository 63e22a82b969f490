// Command-line flags, each also an environment variable (--config-map is OUTRIGGER_CONFIG_MAP);
// flags win over the environment. The shape follows the webhook's flags; errors name the fix.

import { parseArgs } from 'node:util';
import type { ListenAddress } from '@outrigger/kube';
import { CONFIG_MAP_NAME, LEASE_NAME, SYSTEM_NAMESPACE } from '@outrigger/shared';

export interface ObjectRef {
  namespace: string;
  name: string;
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
}

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

const DEFAULTS: Record<string, string> = {
  namespace: SYSTEM_NAMESPACE,
  'metrics-listen': ':9091',
  'leader-elect': 'true',
  'lease-name': LEASE_NAME,
  'log-level': 'info',
};
const NAMES = [...Object.keys(DEFAULTS), 'kubeconfig', 'config-map'];
const OPTIONS = Object.fromEntries(NAMES.map((f) => [f, { type: 'string' as const }]));

export function envName(flag: string): string {
  return `OUTRIGGER_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export function parseAddress(flag: string, value: string): ListenAddress {
  const m = /^(.*):(\d{1,5})$/.exec(value);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    throw new FlagError(
      `--${flag} must be HOST:PORT or :PORT, such as :9091 or 127.0.0.1:9091; got ${JSON.stringify(value)}`,
    );
  return { host: (m[1] ?? '').replace(/^\[(.*)\]$/, '$1'), port };
}

export function parseRef(flag: string, value: string): ObjectRef {
  const m = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(value);
  if (!m?.[1] || !m[2])
    throw new FlagError(
      `--${flag} must be NAMESPACE/NAME, such as outrigger-system/outrigger-config; got ${JSON.stringify(value)}`,
    );
  return { namespace: m[1], name: m[2] };
}

function parseBool(flag: string, value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new FlagError(`--${flag} must be true or false, such as --${flag}=false; got ${value}`);
}

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new FlagError(`--${flag} must be one of ${allowed.join(', ')}; got ${value}`);
}

/** Raw values: command line, then environment, then defaults. A bare --leader-elect is true. */
function rawValues(argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  const args = argv.map((a) => (a === '--leader-elect' ? '--leader-elect=true' : a));
  let given: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    given = parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new FlagError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const out: Record<string, string | undefined> = {};
  for (const flag of NAMES) {
    const value = given[flag];
    out[flag] = typeof value === 'string' ? value : (env[envName(flag)] ?? DEFAULTS[flag]);
  }
  return out;
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
  };
  if (v.kubeconfig) flags.kubeconfig = v.kubeconfig;
  return flags;
}

export const USAGE = `Usage: outrigger-controller [flags]   (each flag is also an environment variable, e.g. --config-map is ${envName('config-map')})

  --kubeconfig PATH             API access (default: in-cluster)
  --namespace NAME              the namespace Outrigger runs in: never labelled, holds the Lease (default outrigger-system)
  --config-map NAMESPACE/NAME   the injector configuration (default <namespace>/outrigger-config; not read yet)
  --metrics-listen HOST:PORT    plain HTTP /metrics, /healthz, /readyz (default :9091)
  --leader-elect true|false     elect a leader on a Lease; only the leader writes (default true)
  --lease-name NAME             the Lease in --namespace (default outrigger-controller)
  --log-level error|warn|info|debug`;
