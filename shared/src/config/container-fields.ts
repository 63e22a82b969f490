// The fields of a Kubernetes container as the configuration writes them, checked here as the API
// server checks them once they are in a pod. A mistake in a container the webhook adds is not
// the pod author's: the API server refuses the pod, patch and all, so one typo in a set would
// stop every pod it selects from being created. The proxy's and the init container's fields are
// read with these (config.ts); a set's containers are read whole (setContainer).

import { isRecord, type Container, type EnvVar } from '../kubernetes/k8s';
import { IDENTITY_VOLUME } from '../names';
import { lifecycle, probe } from './probe-fields';
import {
  bool,
  compareQuantities,
  describe,
  dnsLabel,
  IMAGE_REFERENCE,
  int,
  list,
  mapping,
  oneOf,
  quantities,
  quote,
  str,
  struct,
  type Field,
  type Reader,
} from './schema';

export const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
export type PullPolicy = (typeof PULL_POLICIES)[number];

export interface Resources {
  requests?: Record<string, string>;
  limits?: Record<string, string>;
}

type Path = (string | number)[];

/** The ports one container of a set may declare: the conflict check compares them in pairs. */
export const MAX_CONTAINER_PORTS = 16;

/**
 * An environment variable: a name (printable characters, no `=`), and a string value or a
 * valueFrom, not both. YAML reads `value: 8080` as a number, which the API server refuses.
 */
export const envVar: Field<EnvVar> = (r, v, p) => {
  if (!isRecord(v) || typeof v.name !== 'string' || v.name === '')
    return r.fail(
      p,
      `must be an environment variable {name, value} or {name, valueFrom}; got ${describe(v)}`,
    );
  if (!/^[\x20-\x3c\x3e-\x7e]+$/.test(v.name))
    return r.fail(
      [...p, 'name'],
      `must be printable characters other than '='; got ${quote(v.name)}`,
    );
  if (v.value !== undefined && typeof v.value !== 'string')
    return r.fail(
      [...p, 'value'],
      `must be a string (quote numbers and booleans); got ${describe(v.value)}`,
    );
  return valueFrom(r, v, p) ? (v as unknown as EnvVar) : undefined;
};

/** Where an environment variable's valueFrom takes its value. */
const VALUE_SOURCES = [
  'fieldRef',
  'resourceFieldRef',
  'configMapKeyRef',
  'secretKeyRef',
  'fileKeyRef',
];

/** A variable's valueFrom, if any: a mapping with exactly one source, and no value beside it. */
function valueFrom(r: Reader, v: Record<string, unknown>, p: Path): boolean {
  const from = v.valueFrom;
  if (from === undefined || from === null) return true;
  if (v.value !== undefined && v.value !== '')
    return r.fail(p, `${String(v.name)} has both a value and a valueFrom; keep one`) ?? false;
  if (!isRecord(from))
    return r.fail([...p, 'valueFrom'], `must be a mapping; got ${describe(from)}`) ?? false;
  const sources = VALUE_SOURCES.filter((k) => from[k] !== undefined && from[k] !== null);
  if (sources.length === 1) return true;
  r.fail(
    [...p, 'valueFrom'],
    `must have exactly one of ${VALUE_SOURCES.join(', ')}; got ${sources.length}`,
  );
  return false;
}

export const resources = struct<Resources>({
  requests: { read: quantities },
  limits: { read: quantities },
});

/** A container whose request is above its limit is refused by the API server, pod and all. */
export function requestsWithinLimits(reader: Reader, path: Path, res: Resources): void {
  const at = path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');
  for (const [name, request] of Object.entries(res.requests ?? {})) {
    const limit = res.limits?.[name];
    if (limit === undefined || !(compareQuantities(String(request), String(limit)) > 0)) continue;
    reader.fail(
      [...path, 'requests', name],
      `must be at most the limit ${limit} (${at}.limits.${name}), or Kubernetes refuses every injected pod; got ${request}`,
    );
  }
}

/** A port's name: an IANA service name (at most 15 characters, a letter among them, no `--`). */
const portName: Field<string> = (r, v, p) => {
  const s = str(
    /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/,
    'at most 15 lower-case letters, digits and -',
  )(r, v, p);
  if (s !== undefined && (!/[a-z]/.test(s) || s.includes('--')))
    return r.fail(p, `must hold a letter and no '--'; got ${quote(s)}`);
  return s;
};

const containerPort = struct({
  containerPort: { read: int(1, 65535) },
  hostPort: { read: int(1, 65535) },
  hostIP: { read: str() },
  protocol: { read: oneOf(['TCP', 'UDP', 'SCTP'] as const) },
  name: { read: portName },
});

/** A relative path that stays inside the volume: no leading `/`, no `..` step. */
const subPath: Field<string> = (r, v, p) => {
  if (typeof v !== 'string') return r.fail(p, `must be a string; got ${describe(v)}`);
  if (v.startsWith('/') || v.split('/').includes('..'))
    return r.fail(p, `must be a path inside the volume (relative, no ".."); got ${quote(v)}`);
  return v;
};

const volumeMount = struct({
  name: { read: dnsLabel(63) },
  mountPath: { read: str(/^[^:]*$/, 'a path without ":"') },
  readOnly: { read: bool },
  recursiveReadOnly: { read: oneOf(['Disabled', 'IfPossible', 'Enabled'] as const) },
  subPath: { read: subPath },
  subPathExpr: { read: subPath },
  mountPropagation: { read: oneOf(['None', 'HostToContainer', 'Bidirectional'] as const) },
});

const text: Field<string> = (r, v, p) =>
  typeof v === 'string' ? v : r.fail(p, `must be a string; got ${describe(v)}`);

/** A resource Kubernetes knows by name, or an extended one, named with its domain. */
const STANDARD_RESOURCE = /^(cpu|memory|ephemeral-storage|hugepages-[0-9A-Za-z.]+)$/;
const EXTENDED_RESOURCE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * Resource names a container may ask for, and what an extended resource (a device plugin's,
 * `nvidia.com/gpu`) must be: not overcommitted, so a limit, and a request equal to it.
 */
function checkResourceNames(r: Reader, res: Record<string, unknown>, p: Path): void {
  const requests = isRecord(res.requests) ? res.requests : {};
  const limits = isRecord(res.limits) ? res.limits : {};
  for (const [field, map] of [
    ['requests', requests],
    ['limits', limits],
  ] as const)
    for (const name of Object.keys(map)) {
      if (STANDARD_RESOURCE.test(name)) continue;
      if (!EXTENDED_RESOURCE.test(name) || name.includes('kubernetes.io/'))
        r.fail(
          [...p, field, name],
          'is not a resource a container can ask for: cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource named with its domain (example.com/device)',
        );
      else if (field === 'requests' && limits[name] === undefined)
        r.fail(
          [...p, field, name],
          `is an extended resource: give it a limit equal to the request`,
        );
      else if (
        field === 'requests' &&
        compareQuantities(String(requests[name]), String(limits[name])) !== 0
      )
        r.fail([...p, field, name], `is an extended resource: its request must equal its limit`);
    }
}

/** Most container fields, each read as the API server types it; a few more follow in setContainer. */
const CONTAINER_FIELDS = new Map<string, Field<unknown>>([
  ['command', list(text)],
  ['args', list(text)],
  ['workingDir', text],
  ['env', list(envVar)],
  ['envFrom', list(mapping)],
  [
    'resources',
    struct({
      requests: { read: quantities },
      limits: { read: quantities },
      claims: { read: list(mapping) },
    }),
  ],
  ['resizePolicy', list(mapping)],
  ['volumeDevices', list(mapping)],
  ['livenessProbe', probe('liveness')],
  ['readinessProbe', probe('readiness')],
  ['startupProbe', probe('startup')],
  ['lifecycle', lifecycle],
  ['securityContext', mapping],
  ['terminationMessagePath', str()],
  ['terminationMessagePolicy', oneOf(['File', 'FallbackToLogsOnError'] as const)],
  ['imagePullPolicy', oneOf(PULL_POLICIES)],
  ['stdin', bool],
  ['stdinOnce', bool],
  ['tty', bool],
]);

/** What only a sidecar that keeps running may have: an init container that completes may not. */
const RUNNING_ONLY = ['livenessProbe', 'readinessProbe', 'startupProbe', 'lifecycle'];

const KNOWN = [
  'name',
  'image',
  'ports',
  'volumeMounts',
  'restartPolicy',
  ...CONTAINER_FIELDS.keys(),
];

/** The known field a mistyped key was meant to be, if one is close (a letter off, or its case). */
function meant(key: string): string | undefined {
  const k = key.toLowerCase();
  return KNOWN.find((f) => {
    const g = f.toLowerCase();
    return g === k || g === `${k}s` || `${g}s` === k || editDistanceOne(g, k);
  });
}

function editDistanceOne(a: string, b: string): boolean {
  if (Math.abs(a.length - b.length) > 1) return false;
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return (
    a.slice(i + 1) === b.slice(i + 1) ||
    a.slice(i) === b.slice(i + 1) ||
    a.slice(i + 1) === b.slice(i)
  );
}

const CONTAINER_NAME = dnsLabel(63);
const image = str(IMAGE_REFERENCE, 'an image reference such as ghcr.io/acme/shipper:2.1');

/** Ports: at most MAX_CONTAINER_PORTS of them, each a port with its number, no name twice. */
function checkPorts(r: Reader, ports: unknown, p: Path): void {
  const max = MAX_CONTAINER_PORTS;
  if (!Array.isArray(ports)) return void r.fail(p, `must be a list; got ${describe(ports)}`);
  if (ports.length > max)
    return void r.fail(
      p,
      `a container of a set may declare at most ${max} ports; got ${ports.length}`,
    );
  const named = new Set<string>();
  ports.forEach((port: unknown, i) => {
    if (!isRecord(port))
      return void r.fail([...p, i], `must be a port (a mapping); got ${describe(port)}`);
    containerPort(r, port, [...p, i]);
    if (port.containerPort === undefined || port.containerPort === null)
      r.fail([...p, i], 'needs a containerPort: the port the container listens on');
    if (typeof port.name !== 'string') return;
    if (named.has(port.name))
      r.fail([...p, i, 'name'], `names port ${port.name} twice; rename one`);
    named.add(port.name);
  });
}

function checkMounts(r: Reader, mounts: unknown, p: Path): void {
  if (!Array.isArray(mounts)) return void r.fail(p, `must be a list; got ${describe(mounts)}`);
  const paths = new Set<string>();
  mounts.forEach((m: unknown, i) => {
    if (!isRecord(m))
      return void r.fail([...p, i], `must be a volume mount (a mapping); got ${describe(m)}`);
    volumeMount(r, m, [...p, i]);
    checkMount(r, m, [...p, i]);
    if (typeof m.mountPath !== 'string') return;
    if (paths.has(m.mountPath))
      r.fail([...p, i, 'mountPath'], `mounts ${m.mountPath} twice; keep one`);
    paths.add(m.mountPath);
  });
}

/** What one mount needs beside its fields' types. */
function checkMount(r: Reader, m: Record<string, unknown>, at: Path): void {
  const missing = ['name', 'mountPath'].filter((key) => m[key] === undefined || m[key] === null);
  if (missing.length > 0) r.fail(at, `needs a ${missing.join(' and a ')}`);
  if (m.name === IDENTITY_VOLUME)
    r.fail(
      [...at, 'name'],
      `${IDENTITY_VOLUME} is the proxy's own volume, not there when the proxy is not; give the set a volume of its own`,
    );
  if (typeof m.subPath === 'string' && typeof m.subPathExpr === 'string')
    r.fail(at, 'has both subPath and subPathExpr; keep one');
  const rro = m.recursiveReadOnly;
  if ((rro === 'Enabled' || rro === 'IfPossible') && m.readOnly !== true)
    r.fail([...at, 'recursiveReadOnly'], `${String(rro)} needs readOnly: true`);
}

/** Bidirectional mount propagation, which only a privileged container may have. */
function checkPropagation(r: Reader, c: Record<string, unknown>, p: Path): void {
  const privileged = isRecord(c.securityContext) && c.securityContext.privileged === true;
  if (privileged || !Array.isArray(c.volumeMounts)) return;
  c.volumeMounts.forEach((m: unknown, i) => {
    if (isRecord(m) && m.mountPropagation === 'Bidirectional')
      r.fail(
        [...p, 'volumeMounts', i, 'mountPropagation'],
        'Bidirectional needs a privileged container (securityContext.privileged: true)',
      );
  });
}

/**
 * A container of a set, read whole: a name and an image, every other field the API server
 * knows checked for its type (resources for their quantities and requests within limits, env
 * for string values), unknown fields refused (a typo, named with the field it was likely meant
 * to be). `init`: it runs to completion, so it has no probes and no lifecycle. The value is kept
 * as written: the set's revision is its hash.
 */
export function setContainer(init: boolean): Field<Container> {
  return (r, v, p) => {
    if (!isRecord(v)) return r.fail(p, `must be a container (a mapping); got ${describe(v)}`);
    const name = CONTAINER_NAME(r, v.name, [...p, 'name']);
    const img = image(r, v.image, [...p, 'image']);
    for (const [key, value] of Object.entries(v))
      if (value !== undefined && value !== null) checkField(r, key, value, [...p, key]);
    checkPropagation(r, v, p);
    if (init)
      for (const key of RUNNING_ONLY.filter((k) => v[k] !== undefined && v[k] !== null))
        r.fail(
          [...p, key],
          'is not allowed on an init container, which runs to completion; move the container to .containers to keep it running',
        );
    if (isRecord(v.resources)) {
      requestsWithinLimits(r, [...p, 'resources'], v.resources);
      checkResourceNames(r, v.resources, [...p, 'resources']);
    }
    if (name === undefined || img === undefined) return undefined;
    return v as Container;
  };
}

/** One field of a set's container, other than its name and image. */
function checkField(r: Reader, key: string, value: unknown, at: Path): void {
  const read = CONTAINER_FIELDS.get(key);
  if (read) read(r, value, at);
  else if (key === 'ports') checkPorts(r, value, at);
  else if (key === 'volumeMounts') checkMounts(r, value, at);
  else if (key === 'restartPolicy')
    r.fail(
      at,
      'is set by Outrigger (Always for a native sidecar); leave it out and use .nativeSidecar',
    );
  else if (key !== 'name' && key !== 'image') {
    const guess = meant(key);
    r.fail(
      at,
      `is not a field of a Kubernetes container${guess ? `; did you mean ${guess}?` : ''}`,
    );
  }
}
