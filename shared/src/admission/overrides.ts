// Per-workload overrides from `config.outrigger.dev/<setting>` annotations on the pod (or its
// template) and on its namespace; the pod wins. A bad value never fails admission: it is
// dropped and reported as a warning that names the annotation, the value and the fix.

import type { Config } from '../config/config';
import { OVERRIDE_PREFIX } from '../names';
import { LOG_LEVELS, OVERRIDE_NAMES, type LogLevel, type OverrideName } from './overrides-catalog';
import { IMAGE_REFERENCE, QUANTITY, isPortRange, quote } from '../config/schema';

export interface OverrideValues {
  'proxy-cpu-request': string;
  'proxy-cpu-limit': string;
  'proxy-memory-request': string;
  'proxy-memory-limit': string;
  'proxy-log-level': LogLevel;
  'proxy-image': string;
  'skip-inbound-ports': string[];
  'skip-outbound-ports': string[];
  'native-sidecar': boolean;
  'init-container': boolean;
}

export type Overrides = Partial<OverrideValues>;

/** An override annotation whose value cannot be used. */
export class InvalidOverrideError extends Error {
  constructor(
    readonly annotation: string,
    readonly value: string,
    readonly reason: string,
  ) {
    super(`annotation ${annotation}=${quote(value)} ignored: ${reason}`);
    this.name = 'InvalidOverrideError';
  }
}

type Parsed<T> = { value: T } | { error: string };
type Parse<K extends OverrideName> = (value: string, config: Config) => Parsed<OverrideValues[K]>;

const quantity = (v: string): Parsed<string> =>
  QUANTITY.test(v)
    ? { value: v }
    : { error: 'not a Kubernetes quantity; use a value such as 100m, 64Mi or 1' };

const ports = (v: string): Parsed<string[]> => {
  const list = v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const bad = list.filter((s) => !isPortRange(s));
  if (bad.length === 0) return { value: list };
  return {
    error: `not a comma-separated list of ports or ranges such as 8080,9000-9100 (bad: ${bad.join(', ')})`,
  };
};

const choice =
  <T>(map: Record<string, T>) =>
  (v: string): Parsed<T> =>
    Object.hasOwn(map, v)
      ? { value: map[v] as T }
      : { error: `must be one of ${Object.keys(map).join(', ')}` };

const logLevel = (v: string): Parsed<LogLevel> =>
  (LOG_LEVELS as readonly string[]).includes(v)
    ? { value: v as LogLevel }
    : { error: `must be one of ${LOG_LEVELS.join(', ')}` };

const image = (v: string, config: Config): Parsed<string> => {
  if (!IMAGE_REFERENCE.test(v))
    return { error: 'not an image reference such as ghcr.io/outrigger/proxy:1.0.0' };
  const allowed = config.overrides.allowedRegistries;
  if (allowed.some((r) => isUnder(v, r))) return { value: v };
  return {
    error: `the registry is not allowed; the configuration (overrides.allowedRegistries) allows ${allowed.join(', ') || 'none'}`,
  };
};

/** Whether `image` lies under `prefix`, matching whole path segments: `ghcr.io/org` allows
 * `ghcr.io/org/proxy` but not `ghcr.io/org-evil/proxy`. */
function isUnder(image: string, prefix: string): boolean {
  const boundary = prefix.endsWith('/') ? prefix : `${prefix}/`;
  return image.startsWith(boundary);
}

const PARSERS: { [K in OverrideName]: Parse<K> } = {
  'proxy-cpu-request': quantity,
  'proxy-cpu-limit': quantity,
  'proxy-memory-request': quantity,
  'proxy-memory-limit': quantity,
  'proxy-log-level': logLevel,
  'proxy-image': image,
  'skip-inbound-ports': ports,
  'skip-outbound-ports': ports,
  'native-sidecar': choice({ true: true, false: false }),
  'init-container': choice({ enabled: true, disabled: false }),
};

export interface OverridesInput {
  /** Annotations of the pod or pod template. */
  podAnnotations: Record<string, string> | undefined;
  namespaceAnnotations: Record<string, string> | undefined;
  /** The namespace's name, for warnings about its annotations. */
  namespaceName: string | undefined;
  config: Config;
  /** Names the object in warnings, such as `Pod default/web-1` or `namespace shop`. */
  podDescription: string;
}

export interface ResolvedOverrides {
  values: Overrides;
  warnings: string[];
}

export function resolveOverrides(input: OverridesInput): ResolvedOverrides {
  const values: Overrides = {};
  const warnings: string[] = [];
  // Namespace first, so the pod's value overwrites it. Nearly every pod has no override: the
  // names for warnings are made only when there is one to give.
  const namespace = (): string => `Namespace ${input.namespaceName ?? ''}`.trim();
  readOverrides(input.namespaceAnnotations, input.config, values, (w) =>
    warnings.push(`${namespace()}: ${w}`),
  );
  readOverrides(input.podAnnotations, input.config, values, (w) =>
    warnings.push(`${input.podDescription}: ${w}`),
  );
  return { values, warnings };
}

/** The override annotations among `annotations`, into `values`; a bad one is warned about. */
function readOverrides(
  annotations: Record<string, string> | undefined,
  config: Config,
  values: Overrides,
  warn: (warning: string) => void,
): void {
  if (annotations === undefined || annotations === null) return;
  for (const key in annotations) {
    if (!Object.hasOwn(annotations, key) || !key.startsWith(OVERRIDE_PREFIX)) continue;
    const result = readOverride(key, String(annotations[key]), config);
    if (result instanceof InvalidOverrideError) warn(result.message);
    else Object.assign(values, result);
  }
}

function readOverride(
  annotation: string,
  value: string,
  config: Config,
): Overrides | InvalidOverrideError {
  const name = annotation.slice(OVERRIDE_PREFIX.length);
  if (!isOverrideName(name))
    return new InvalidOverrideError(
      annotation,
      value,
      `unknown setting; known settings: ${OVERRIDE_NAMES.join(', ')}`,
    );
  if (!config.overrides.allowed.includes(name))
    return new InvalidOverrideError(
      annotation,
      value,
      'the configuration does not allow this override (overrides.allowed); ask the cluster admin',
    );
  const parsed = (PARSERS[name] as Parse<OverrideName>)(value.trim(), config);
  if ('error' in parsed) return new InvalidOverrideError(annotation, value, parsed.error);
  return { [name]: parsed.value };
}

function isOverrideName(name: string): name is OverrideName {
  return (OVERRIDE_NAMES as readonly string[]).includes(name);
}
