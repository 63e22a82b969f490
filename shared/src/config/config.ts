// The injector configuration: its types, its defaults, and a parser that validates a YAML
// document and reports every error with its YAML path, line and what is allowed there.

import type { EnvVar } from '../kubernetes/k8s';
import {
  LOG_LEVELS,
  OVERRIDE_NAMES,
  type LogLevel,
  type OverrideName,
} from '../admission/overrides-catalog';
import {
  envVar,
  PULL_POLICIES,
  requestsWithinLimits,
  resources,
  type PullPolicy,
  type Resources,
} from './container-fields';
import { probe } from './probe-fields';
import { rolloutSchema, type RolloutConfig } from './rollout-config';
import { checkSetConflicts } from './set-conflicts';
import { MAX_SETS, sidecarSetSchema, type SidecarSetConfig } from './sidecar-set';
import {
  Reader,
  bool,
  dnsLabel,
  IMAGE_REFERENCE,
  int,
  list,
  mapping,
  oneOf,
  portRange,
  str,
  struct,
  type SchemaIssue,
} from './schema';

export const NATIVE_SIDECAR_MODES = ['auto', 'true', 'false'] as const;

export type NativeSidecarMode = (typeof NATIVE_SIDECAR_MODES)[number];

export interface ProxyPorts {
  /** Where redirected inbound traffic arrives. */
  inbound: number;
  /** Where redirected outbound traffic arrives. */
  outbound: number;
  /** Health, readiness and metrics. */
  admin: number;
}

export interface ProxyConfig {
  name: string;
  image: string;
  imagePullPolicy: PullPolicy;
  ports: ProxyPorts;
  /** The user id the proxy runs as; the init container exempts its traffic from redirection. */
  uid: number;
  args: string[];
  env: EnvVar[];
  logLevel: LogLevel;
  resources: Resources;
  readinessProbe?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  startupProbe?: Record<string, unknown>;
  securityContext: Record<string, unknown>;
}

export interface InitConfig {
  enabled: boolean;
  name: string;
  image: string;
  imagePullPolicy: PullPolicy;
  args: string[];
  resources: Resources;
  securityContext: Record<string, unknown>;
  skipInboundPorts: string[];
  skipOutboundPorts: string[];
}

export interface OverridesConfig {
  allowed: OverrideName[];
  /** Image prefixes (registry, optionally with a path) a `proxy-image` override may name. */
  allowedRegistries: string[];
}

export interface Config {
  proxy: ProxyConfig;
  init: InitConfig;
  nativeSidecar: NativeSidecarMode;
  excludeNamespaces: string[];
  overrides: OverridesConfig;
  rollout: RolloutConfig;
  /** The sidecar sets beside the proxy (sidecar-set.ts), as written; applied by order, then name. */
  sets: SidecarSetConfig[];
}

const image = str(IMAGE_REFERENCE, 'an image reference such as ghcr.io/outrigger/proxy:1.0.0');

const port = int(1, 65535);

const proxySchema = struct<ProxyConfig>({
  name: { read: dnsLabel(63), default: 'outrigger-proxy' },
  image: { read: image, default: 'ghcr.io/outrigger/proxy:1.0.0' },
  imagePullPolicy: { read: oneOf(PULL_POLICIES), default: 'IfNotPresent' },
  ports: {
    read: struct<ProxyPorts>({
      inbound: { read: port, default: 4143 },
      outbound: { read: port, default: 4140 },
      admin: { read: port, default: 4191 },
    }),
    section: true,
  },
  uid: { read: int(1, 2147483647), default: 2102 },
  args: { read: list(str()), default: [] },
  env: { read: list(envVar), default: [] },
  logLevel: { read: oneOf(LOG_LEVELS), default: 'info' },
  resources: {
    read: resources,
    default: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '256Mi' } },
  },
  // Absent probes are derived from the admin port (see withDerivedDefaults).
  readinessProbe: { read: probe('readiness') },
  livenessProbe: { read: probe('liveness') },
  startupProbe: { read: probe('startup') },
  securityContext: {
    read: mapping,
    default: {
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    },
  },
});

const initSchema = struct<InitConfig>({
  enabled: { read: bool, default: true },
  name: { read: dnsLabel(63), default: 'outrigger-init' },
  image: { read: image, default: 'ghcr.io/outrigger/proxy-init:1.0.0' },
  imagePullPolicy: { read: oneOf(PULL_POLICIES), default: 'IfNotPresent' },
  args: { read: list(str()), default: [] },
  resources: {
    read: resources,
    default: { requests: { cpu: '10m', memory: '10Mi' }, limits: { cpu: '100m', memory: '32Mi' } },
  },
  securityContext: {
    read: mapping,
    default: {
      runAsUser: 0,
      runAsNonRoot: false,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { add: ['NET_ADMIN', 'NET_RAW'], drop: ['ALL'] },
    },
  },
  skipInboundPorts: { read: list(portRange), default: [] },
  skipOutboundPorts: { read: list(portRange), default: [] },
});

const registry = str(
  /^[a-z0-9][a-z0-9.\-:/]*$/,
  'a registry host, optionally with a path, such as ghcr.io/outrigger/',
);

const overridesSchema = struct<OverridesConfig>({
  allowed: { read: list(oneOf(OVERRIDE_NAMES)), default: [...OVERRIDE_NAMES] },
  allowedRegistries: { read: list(registry), default: ['ghcr.io/outrigger/'] },
});

const configSchema = struct<Config>({
  proxy: { read: proxySchema, section: true },
  init: { read: initSchema, section: true },
  nativeSidecar: { read: oneOf(NATIVE_SIDECAR_MODES), default: 'auto' },
  excludeNamespaces: { read: list(dnsLabel(63)), default: [] },
  overrides: { read: overridesSchema, section: true },
  rollout: { read: rolloutSchema, section: true },
  sets: { read: list(sidecarSetSchema), default: [] },
});

/** One problem in a configuration document. */
export interface ConfigIssue {
  /** YAML path such as `.proxy.resources.limits.cpu` or `.proxy.env[2].value`. */
  path: string;
  /** 1-based line in the document, when the path exists there. */
  line?: number;
  message: string;
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: ConfigIssue[] };

/** A key written plainly after a dot; any other (a label key with dots) is quoted in brackets. */
const PLAIN_KEY = /^[A-Za-z0-9_-]+$/;

export function formatPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return '.';
  const step = (k: string | number): string => {
    if (typeof k === 'number') return `[${k}]`;
    return PLAIN_KEY.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`;
  };
  return path.map(step).join('');
}

/** The typed error carried by every configuration failure, listing all issues. */
export class ConfigError extends Error {
  constructor(
    readonly errors: ConfigIssue[],
    readonly source = 'configuration',
  ) {
    super(`invalid ${source}:\n${errors.map((e) => `  ${formatIssue(e)}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line === undefined ? issue.path : `${issue.path} (line ${issue.line})`;
  return `${where}: ${issue.message}`;
}

/** Applies defaults and checks a configuration already read as a plain value. */
export function readConfig(value: unknown): ConfigResult {
  const r = new Reader();
  const config = configSchema(r, value, []);
  // Across fields only once each field read well: a section that failed is partly missing.
  if (r.issues.length === 0) crossCheck(r, config);
  if (r.issues.length > 0 || !config) {
    const errors = r.issues.map(toIssue);
    if (r.dropped > 0)
      errors.push({
        path: '.',
        message: `and ${r.dropped} more problems, not listed: fix these first`,
      });
    return { ok: false, errors };
  }
  return { ok: true, config: withDerivedDefaults(config) };
}

/** Defaults that depend on other fields: the probes follow the admin port. */
function withDerivedDefaults(config: Config): Config {
  const port = config.proxy.ports.admin;
  const proxy = { ...config.proxy };
  proxy.readinessProbe ??= {
    httpGet: { path: '/ready', port },
    initialDelaySeconds: 2,
    periodSeconds: 10,
  };
  proxy.livenessProbe ??= {
    httpGet: { path: '/live', port },
    initialDelaySeconds: 10,
    periodSeconds: 10,
  };
  return { ...config, proxy };
}

function crossCheck(reader: Reader, config: Config | undefined): void {
  if (!config) return;
  if (config.init.name === config.proxy.name)
    reader.fail(['init', 'name'], `must differ from .proxy.name ("${config.proxy.name}")`);
  const { inbound, outbound, admin } = config.proxy.ports;
  if (new Set([inbound, outbound, admin]).size !== 3)
    reader.fail(
      ['proxy', 'ports'],
      `inbound, outbound and admin must be three different ports; got ${inbound}, ${outbound}, ${admin}`,
    );
  requestsWithinLimits(reader, ['proxy', 'resources'], config.proxy.resources);
  requestsWithinLimits(reader, ['init', 'resources'], config.init.resources);
  if (config.sets.length > MAX_SETS)
    return void reader.fail(
      ['sets'],
      `at most ${MAX_SETS} sets; got ${config.sets.length} (merge sets that always go together)`,
    );
  checkSetConflicts(
    reader,
    { proxyName: config.proxy.name, initName: config.init.name, ports: config.proxy.ports },
    config.sets,
  );
}

function toIssue(issue: SchemaIssue): ConfigIssue {
  return { path: formatPath(issue.path), message: issue.message };
}

/** The configuration with every default, the same as an empty document. */
export function defaultConfig(): Config {
  const result = readConfig({});
  if (!result.ok) throw new ConfigError(result.errors, 'built-in default configuration');
  return result.config;
}

export { PULL_POLICIES, type PullPolicy, type Resources } from './container-fields';
export {
  FAILURE_ACTIONS,
  MAX_HISTORY,
  ROLLOUT_MODES,
  type CanaryConfig,
  type FailureAction,
  type RolloutConfig,
  type RolloutMode,
} from './rollout-config';
