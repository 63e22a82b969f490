// Command-line flags, each also readable from an environment variable: --config-map is
// OUTRIGGER_CONFIG_MAP. Flags win over the environment. Errors name the flag and the fix.

import { parseArgs } from 'node:util';

export interface WebhookFlags {
  listen: Address;
  metricsListen: Address;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  tlsSecret?: ObjectRef;
  configFile?: string;
  configMap?: ObjectRef;
  kubeconfig?: string;
  onError: 'allow' | 'deny';
  logLevel: string;
  maxBodyBytes: number;
  shutdownDelaySeconds: number;
  systemNamespace: string;
  nativeSidecars: 'auto' | 'supported' | 'unsupported';
}

export interface Address {
  host: string;
  port: number;
}

export interface ObjectRef {
  namespace: string;
  name: string;
}

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

const DEFAULTS: Record<string, string> = {
  listen: ':8443',
  'metrics-listen': ':9090',
  'on-error': 'allow',
  'log-level': 'info',
  'max-body-bytes': String(8 * 1024 * 1024),
  'shutdown-delay-seconds': '5',
  'system-namespace': 'outrigger-system',
  'native-sidecars': 'auto',
};

const NAMES = [
  ...Object.keys(DEFAULTS),
  'tls-cert-file',
  'tls-key-file',
  'tls-secret',
  'config-file',
  'config-map',
  'kubeconfig',
] as const;
const OPTIONS = Object.fromEntries(NAMES.map((f) => [f, { type: 'string' as const }]));

export const FLAG_NAMES: readonly string[] = NAMES;

export function envName(flag: string): string {
  return `OUTRIGGER_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export function parseAddress(flag: string, value: string): Address {
  const m = /^(.*):(\d{1,5})$/.exec(value);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    throw new FlagError(
      `--${flag} must be HOST:PORT or :PORT, such as :8443 or 127.0.0.1:8443; got ${JSON.stringify(value)}`,
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

function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new FlagError(
    `--${flag} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}`,
  );
}

function positiveInt(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new FlagError(
      `--${flag} must be an integer of at least ${min}; got ${JSON.stringify(value)}`,
    );
  return n;
}

/** Raw flag values: command line first, then environment, then defaults. */
function rawValues(argv: string[], env: NodeJS.ProcessEnv): Record<string, string | undefined> {
  let given: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    given = parseArgs({
      args: argv,
      options: OPTIONS,
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new FlagError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const out: Record<string, string | undefined> = {};
  for (const flag of FLAG_NAMES) {
    const value = given[flag];
    out[flag] = typeof value === 'string' ? value : (env[envName(flag)] ?? DEFAULTS[flag]);
  }
  return out;
}

export function parseFlags(argv: string[], env: NodeJS.ProcessEnv = {}): WebhookFlags {
  const v = rawValues(argv, env);
  const get = (f: string): string => v[f] ?? '';
  const flags: WebhookFlags = {
    listen: parseAddress('listen', get('listen')),
    metricsListen: parseAddress('metrics-listen', get('metrics-listen')),
    onError: oneOf('on-error', get('on-error'), ['allow', 'deny'] as const),
    logLevel: oneOf('log-level', get('log-level'), ['error', 'warn', 'info', 'debug'] as const),
    maxBodyBytes: positiveInt('max-body-bytes', get('max-body-bytes'), 1024),
    shutdownDelaySeconds: positiveInt('shutdown-delay-seconds', get('shutdown-delay-seconds'), 0),
    systemNamespace: get('system-namespace'),
    nativeSidecars: oneOf('native-sidecars', get('native-sidecars'), [
      'auto',
      'supported',
      'unsupported',
    ] as const),
  };
  const optional = {
    tlsCertFile: v['tls-cert-file'],
    tlsKeyFile: v['tls-key-file'],
    configFile: v['config-file'],
    kubeconfig: v.kubeconfig,
  };
  for (const [k, value] of Object.entries(optional))
    if (value) flags[k as keyof typeof optional] = value;
  if (v['tls-secret']) flags.tlsSecret = parseRef('tls-secret', v['tls-secret']);
  if (v['config-map']) flags.configMap = parseRef('config-map', v['config-map']);
  return checkCombinations(flags);
}

function checkCombinations(f: WebhookFlags): WebhookFlags {
  const files = f.tlsCertFile !== undefined || f.tlsKeyFile !== undefined;
  if (files && f.tlsSecret)
    throw new FlagError(
      'give either --tls-cert-file and --tls-key-file, or --tls-secret, not both',
    );
  if (files && (!f.tlsCertFile || !f.tlsKeyFile))
    throw new FlagError('--tls-cert-file and --tls-key-file go together');
  if (!files && !f.tlsSecret)
    throw new FlagError(
      'the webhook serves HTTPS only: give --tls-cert-file and --tls-key-file, or --tls-secret NAMESPACE/NAME',
    );
  if (f.configFile && f.configMap)
    throw new FlagError('give either --config-file or --config-map, not both');
  return f;
}

export const USAGE = `Usage: outrigger-webhook [flags]   (each flag is also an environment variable, e.g. --config-map is ${envName('config-map')})

  --listen HOST:PORT              HTTPS admission endpoint (default :8443)
  --metrics-listen HOST:PORT      plain HTTP /metrics, /healthz, /readyz (default :9090)
  --tls-cert-file F --tls-key-file F   serving certificate from files (reloaded when they change)
  --tls-secret NAMESPACE/NAME     serving certificate from a kubernetes.io/tls Secret (watched)
  --config-file PATH              injector configuration from a file (watched)
  --config-map NAMESPACE/NAME     injector configuration from a ConfigMap, key config.yaml (watched)
                                  (neither: the documented default configuration)
  --kubeconfig PATH               API access (default: in-cluster; with neither, standalone: no API)
  --on-error allow|deny           answer to an internal failure (default allow, with a warning)
  --native-sidecars auto|supported|unsupported   (default auto: ask the API server's version)
  --system-namespace NAME         the namespace Outrigger runs in, never injected (default outrigger-system)
  --max-body-bytes N              larger request bodies get 413 (default 8 MiB)
  --shutdown-delay-seconds N      after SIGTERM, keep serving N seconds with /readyz failing (default 5)
  --log-level error|warn|info|debug`;
