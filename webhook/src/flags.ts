// Command-line flags, each also readable from an environment variable: --config-map is
// OUTRIGGER_CONFIG_MAP. Flags win over the environment. Errors name the flag and the fix.

import {
  FlagError,
  envName,
  namingTheVariable,
  oneOf,
  parseAddress,
  parseRef,
  readFlags,
  type ListenAddress,
  type LogLevel,
  type ObjectRef,
} from '@outrigger/kube/without-api';
import { MAX_CONNECTIONS } from './connections';

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
  logLevel: LogLevel;
  maxBodyBytes: number;
  maxBodyBytesInFlight: number;
  maxConnections: number;
  shutdownDelaySeconds: number;
  systemNamespace: string;
  nativeSidecars: 'auto' | 'supported' | 'unsupported';
}

export type Address = ListenAddress;

const DEFAULTS: Record<string, string> = {
  listen: ':8443',
  'metrics-listen': ':9090',
  'on-error': 'allow',
  'log-level': 'info',
  // An object the API server accepts is at most 3 MiB of JSON (its request body limit); a
  // review of an UPDATE carries two (object and oldObject), plus a small envelope.
  'max-body-bytes': String(7 * 1024 * 1024),
  // Two reviews of the largest size at once; bodies of 64 KiB or less (every real pod's
  // review) are read outside it.
  'max-body-bytes-in-flight': String(16 * 1024 * 1024),
  'max-connections': String(MAX_CONNECTIONS),
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
function positiveInt(flag: string, value: string, min: number, max?: number): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max))
    throw new FlagError(
      `--${flag} must be an integer ${max === undefined ? `of at least ${min}` : `from ${min} to ${max}`}; got ${JSON.stringify(value)}`,
    );
  return n;
}

/** An hour: the pod's termination grace period must cover the delay, and far less is usual. */
const MAX_SHUTDOWN_DELAY_SECONDS = 3600;

export function parseFlags(argv: string[], env: NodeJS.ProcessEnv = {}): WebhookFlags {
  return namingTheVariable(argv, env, () => flagValues(argv, env));
}

function flagValues(argv: string[], env: NodeJS.ProcessEnv): WebhookFlags {
  const v = readFlags(argv, env, { names: NAMES, defaults: DEFAULTS, usage: USAGE });
  const get = (f: string): string => v[f] ?? '';
  const flags: WebhookFlags = {
    listen: parseAddress('listen', get('listen')),
    metricsListen: parseAddress('metrics-listen', get('metrics-listen')),
    onError: oneOf('on-error', get('on-error'), ['allow', 'deny'] as const),
    logLevel: oneOf('log-level', get('log-level'), ['error', 'warn', 'info', 'debug'] as const),
    maxBodyBytes: positiveInt('max-body-bytes', get('max-body-bytes'), 1024),
    maxBodyBytesInFlight: positiveInt(
      'max-body-bytes-in-flight',
      get('max-body-bytes-in-flight'),
      1024,
    ),
    maxConnections: positiveInt('max-connections', get('max-connections'), 1),
    shutdownDelaySeconds: positiveInt(
      'shutdown-delay-seconds',
      get('shutdown-delay-seconds'),
      0,
      MAX_SHUTDOWN_DELAY_SECONDS,
    ),
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

function checkCombinations(flags: WebhookFlags): WebhookFlags {
  const files = flags.tlsCertFile !== undefined || flags.tlsKeyFile !== undefined;
  if (files && flags.tlsSecret)
    throw new FlagError(
      'give either --tls-cert-file and --tls-key-file, or --tls-secret, not both',
    );
  if (files && (!flags.tlsCertFile || !flags.tlsKeyFile))
    throw new FlagError('--tls-cert-file and --tls-key-file go together');
  if (!files && !flags.tlsSecret)
    throw new FlagError(
      'the webhook serves HTTPS only: give --tls-cert-file and --tls-key-file, or --tls-secret NAMESPACE/NAME',
    );
  if (flags.maxBodyBytesInFlight < flags.maxBodyBytes)
    throw new FlagError(
      `--max-body-bytes-in-flight (${flags.maxBodyBytesInFlight}) must be at least --max-body-bytes (${flags.maxBodyBytes})`,
    );
  if (flags.configFile && flags.configMap)
    throw new FlagError('give either --config-file or --config-map, not both');
  return flags;
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
  --max-body-bytes N              larger request bodies get 413 (default 7 MiB)
  --max-body-bytes-in-flight N    large bodies (over 64 KiB) read at once; more wait (default 16 MiB)
  --max-connections N             open connections; at the cap the client with the most idle or stalled makes room (default ${MAX_CONNECTIONS})
  --shutdown-delay-seconds N      after SIGTERM, keep serving N seconds (at most 3600) with /readyz failing (default 5)
  --log-level error|warn|info|debug`;

export { FlagError, type ObjectRef };
