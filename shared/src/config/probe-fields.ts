// A container's probes and lifecycle hooks, checked as the API server checks them: one handler
// each, with what the handler needs (a port to reach, a command to run), the timings whole
// numbers, and a liveness or startup probe that succeeds once. A key with a null value is
// absent, as the API server reads it.

import { isRecord } from '../kubernetes/k8s';
import { describe, int, list, oneOf, str, struct, type Field, type Reader } from './schema';

type Path = (string | number)[];

/** A port to reach: a number, or the name of one of the container's ports. */
const probePort: Field<number | string> = (r, v, p) => {
  if (typeof v === 'number') return int(1, 65535)(r, v, p);
  if (typeof v === 'string' && /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(v)) return v;
  return r.fail(p, `must be a port number (1-65535) or a port's name; got ${describe(v)}`);
};

const text: Field<string> = (r, v, p) =>
  typeof v === 'string' ? v : r.fail(p, `must be a string; got ${describe(v)}`);

const HANDLERS: Record<string, Field<unknown>> = {
  exec: struct({ command: { read: list(text) } }),
  httpGet: struct({
    path: { read: text },
    port: { read: probePort },
    host: { read: str() },
    scheme: { read: oneOf(['HTTP', 'HTTPS'] as const) },
    httpHeaders: { read: list(struct({ name: { read: str() }, value: { read: text } })) },
  }),
  tcpSocket: struct({ port: { read: probePort }, host: { read: str() } }),
  grpc: struct({ port: { read: int(1, 65535) }, service: { read: text } }),
  sleep: struct({ seconds: { read: int(0, 2147483647) } }),
};

/** What each handler cannot do without. */
const NEEDS: Record<string, string> = {
  exec: 'command',
  httpGet: 'port',
  tcpSocket: 'port',
  grpc: 'port',
  sleep: 'seconds',
};

const present = (m: Record<string, unknown>, key: string): boolean =>
  m[key] !== undefined && m[key] !== null;

/** Exactly one of `allowed`, read with what it needs; the keys it found. */
function oneHandler(
  r: Reader,
  m: Record<string, unknown>,
  p: Path,
  allowed: readonly string[],
): void {
  const found = allowed.filter((h) => present(m, h));
  if (found.length !== 1)
    return void r.fail(p, `must have exactly one of ${allowed.join(', ')}; got ${found.length}`);
  const [handler = ''] = found;
  const value = m[handler];
  HANDLERS[handler]?.(r, value, [...p, handler]);
  const need = NEEDS[handler] ?? '';
  if (isRecord(value) && !present(value, need)) r.fail([...p, handler], `needs a ${need}`);
}

const seconds = int(0, 2147483647);
const PROBE_TIMINGS = [
  'initialDelaySeconds',
  'timeoutSeconds',
  'periodSeconds',
  'successThreshold',
  'failureThreshold',
] as const;
const PROBE_FIELDS = [
  'exec',
  'httpGet',
  'tcpSocket',
  'grpc',
  ...PROBE_TIMINGS,
  'terminationGracePeriodSeconds',
];

/**
 * A probe: exactly one handler, with its port or command; whole-number timings. `kind`: a
 * liveness or startup probe succeeds once (successThreshold 1), and only they may say how long
 * the kubelet waits to kill the container.
 */
export function probe(kind: 'liveness' | 'readiness' | 'startup'): Field<Record<string, unknown>> {
  return (r, v, p) => {
    if (!isRecord(v)) return r.fail(p, `must be a probe (a mapping); got ${describe(v)}`);
    for (const key of Object.keys(v))
      if (!PROBE_FIELDS.includes(key))
        r.fail([...p, key], `is not a field of a probe; allowed: ${PROBE_FIELDS.join(', ')}`);
    oneHandler(r, v, p, ['exec', 'httpGet', 'tcpSocket', 'grpc']);
    for (const key of PROBE_TIMINGS) if (present(v, key)) seconds(r, v[key], [...p, key]);
    const success = v.successThreshold;
    if (kind !== 'readiness' && present(v, 'successThreshold') && success !== 0 && success !== 1)
      r.fail([...p, 'successThreshold'], `must be 1 for a ${kind} probe; got ${describe(success)}`);
    if (present(v, 'terminationGracePeriodSeconds')) {
      if (kind === 'readiness')
        r.fail(
          [...p, 'terminationGracePeriodSeconds'],
          'is not allowed on a readiness probe, which never kills the container',
        );
      else
        int(1, 2147483647)(r, v.terminationGracePeriodSeconds, [
          ...p,
          'terminationGracePeriodSeconds',
        ]);
    }
    return v;
  };
}

/** Lifecycle hooks: postStart and preStop, each one handler (exec, httpGet or sleep). */
export const lifecycle: Field<Record<string, unknown>> = (r, v, p) => {
  if (!isRecord(v)) return r.fail(p, `must be a mapping; got ${describe(v)}`);
  for (const [key, hook] of Object.entries(v)) {
    if (hook === undefined || hook === null) continue;
    if (key === 'stopSignal') continue;
    if (key !== 'postStart' && key !== 'preStop') {
      r.fail([...p, key], 'is not a lifecycle hook; allowed: postStart, preStop, stopSignal');
      continue;
    }
    if (!isRecord(hook)) r.fail([...p, key], `must be a mapping; got ${describe(hook)}`);
    else oneHandler(r, hook, [...p, key], ['exec', 'httpGet', 'tcpSocket', 'sleep']);
  }
  return v;
};
