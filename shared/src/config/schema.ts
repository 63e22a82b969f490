// A small validating reader for plain YAML/JSON values: each reader returns the typed value
// or records an error with the path and what is allowed there, so a whole document is checked
// in one pass and every error is reported, not just the first.

import { cloneJson, isRecord } from '../kubernetes/k8s';

export interface SchemaIssue {
  /** Path in the document, as keys and indexes. */
  path: (string | number)[];
  message: string;
}

/** At most this many problems are kept of one document; the rest are only counted. */
export const MAX_ISSUES = 100;

export class Reader {
  readonly issues: SchemaIssue[] = [];
  /** Problems past MAX_ISSUES: counted, not kept. */
  dropped = 0;

  fail(path: (string | number)[], message: string): undefined {
    if (this.issues.length < MAX_ISSUES) this.issues.push({ path, message });
    else this.dropped++;
    return undefined;
  }
}

/** Reads `value` at `path`; undefined means "absent" to the caller, or an error was recorded. */
export type Field<T> = (r: Reader, value: unknown, path: (string | number)[]) => T | undefined;

/** How a value is named in an error message: its type, and for a scalar a bounded prefix of it. */
export function describe(value: unknown): string {
  if (value === undefined) return 'nothing (it is missing)';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (isRecord(value)) return 'a mapping';
  if (typeof value === 'string') return `string ${quote(value)}`;
  if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${value}`;
  return typeof value;
}

const QUOTE_LIMIT = 40;

/** A string cut to a bounded prefix, for messages and paths: input can be megabytes long. */
export function clipped(value: string): string {
  return value.length > QUOTE_LIMIT ? `${value.slice(0, QUOTE_LIMIT)}...` : value;
}

/** A string quoted for an error message, cut to a bounded prefix. */
export function quote(value: string): string {
  return JSON.stringify(clipped(value));
}

export const str =
  (pattern?: RegExp, hint?: string): Field<string> =>
  (r, v, p) => {
    if (typeof v !== 'string' || v === '')
      return r.fail(p, `must be a non-empty string; got ${describe(v)}`);
    if (pattern && !pattern.test(v))
      return r.fail(
        p,
        `must be ${hint ?? `a string matching ${String(pattern)}`}; got ${quote(v)}`,
      );
    return v;
  };

export const int =
  (min: number, max: number): Field<number> =>
  (r, v, p) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      return r.fail(p, `must be an integer from ${min} to ${max}; got ${describe(v)}`);
    return v;
  };

export const bool: Field<boolean> = (r, v, p) =>
  typeof v === 'boolean' ? v : r.fail(p, `must be true or false; got ${describe(v)}`);

export function oneOf<T extends string>(values: readonly T[]): Field<T> {
  return (r, v, p) => {
    const s = typeof v === 'boolean' ? String(v) : v;
    if (typeof s === 'string' && (values as readonly string[]).includes(s)) return s as T;
    return r.fail(p, `must be one of ${values.join(', ')}; got ${describe(v)}`);
  };
}

export function list<T>(item: Field<T>): Field<T[]> {
  return (r, v, p) => {
    if (!Array.isArray(v)) return r.fail(p, `must be a list; got ${describe(v)}`);
    const out: T[] = [];
    v.forEach((x, i) => {
      const read = item(r, x, [...p, i]);
      if (read !== undefined) out.push(read);
    });
    return out;
  };
}

/** A mapping taken as it is (a probe, a security context): only its shape is checked here. */
export const mapping: Field<Record<string, unknown>> = (r, v, p) =>
  isRecord(v) ? v : r.fail(p, `must be a mapping; got ${describe(v)}`);

/** How one key is read: absent keys take `default`, or, for a `section`, the defaults of its own fields. */
type Fields<T> = {
  [K in keyof T]-?: { read: Field<NonNullable<T[K]>>; default?: T[K]; section?: true };
};

/**
 * A mapping with known keys. Unknown keys are errors (they are almost always typos); a key
 * without a default is optional and stays absent.
 */
export function struct<T extends object>(fields: Fields<T>): Field<T> {
  return (r, v, p) => {
    const input = v ?? {};
    if (!isRecord(input)) return r.fail(p, `must be a mapping; got ${describe(v)}`);
    const known = Object.keys(fields);
    for (const key of Object.keys(input)) {
      if (!known.includes(key))
        r.fail([...p, key], `unknown field; allowed here: ${known.join(', ')}`);
    }
    const out: Record<string, unknown> = {};
    for (const [key, spec] of Object.entries<Fields<T>[keyof T]>(fields)) {
      const raw = input[key];
      const absent = raw === undefined || raw === null;
      const value =
        absent && !spec.section ? spec.default : spec.read(r, absent ? {} : raw, [...p, key]);
      if (value !== undefined) out[key] = cloneJson(value);
    }
    return out as T;
  };
}

/** A Kubernetes resource quantity such as 100m, 64Mi, 1.5, 2e3. */
export const QUANTITY = /^[+]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$/;

const SUFFIX: Record<string, number> = {
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
};

/** The value of a quantity in base units (cores, bytes), for comparisons; NaN if malformed. */
export function quantityValue(q: string): number {
  const m = /^\+?((?:\d+(?:\.\d*)?)|(?:\.\d+))([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$/.exec(q);
  if (!m) return NaN;
  const number = Number(m[1]);
  const suffix = m[2] ?? '';
  if (EXPONENT.test(suffix)) return number * 10 ** Number(suffix.slice(1));
  return number * (SUFFIX[suffix] ?? NaN);
}

/** A suffix that is an exponent (1e3, 1E-3), not E for exa (10^18) or Ei (2^60). */
const EXPONENT = /^[eE][+-]?\d/;

/** Powers of ten of the decimal suffixes. */
const DECIMAL_EXPONENT: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

/** Beyond this power of ten a quantity is compared by its approximate value. */
const EXACT_EXPONENT = 100;

/** The powers of ten and of two a quantity's suffix multiplies by. */
function suffixPowers(suffix: string): { ten: number; two: number } {
  if (EXPONENT.test(suffix)) return { ten: Number(suffix.slice(1)), two: 0 };
  const binary = /^([KMGTPE])i$/.exec(suffix)?.[1];
  if (binary) return { ten: 0, two: 10 * ('KMGTPE'.indexOf(binary) + 1) };
  return { ten: DECIMAL_EXPONENT[suffix] ?? 0, two: 0 };
}

/** A quantity as digits × 10^ten × 2^two, exactly; undefined if malformed or too far out. */
function exactQuantity(q: string): { digits: bigint; ten: number; two: number } | undefined {
  const m = /^\+?(\d*)(?:\.(\d*))?([eE][+-]?\d+|[KMGTPE]i|[numkMGTPE])?$/.exec(q);
  if (!m || !QUANTITY.test(q)) return undefined;
  const [, whole = '', fraction = '', suffix = ''] = m;
  const powers = suffixPowers(suffix);
  const ten = powers.ten - fraction.length;
  if (Math.abs(ten) > EXACT_EXPONENT) return undefined;
  return { digits: BigInt(`${whole}${fraction}` || '0'), ten, two: powers.two };
}

/**
 * -1, 0 or 1 as quantity `a` is less than, equal to or more than `b`; NaN if either is malformed.
 * Exact: in floating point 0.7 × 1000 is not 700, and 700m would exceed a limit of 0.7.
 */
export function compareQuantities(a: string, b: string): number {
  const x = exactQuantity(a);
  const y = exactQuantity(b);
  if (!x || !y) return Math.sign(quantityValue(a) - quantityValue(b));
  const ten = Math.min(x.ten, y.ten);
  const two = Math.min(x.two, y.two);
  const scaled = (q: { digits: bigint; ten: number; two: number }): bigint =>
    q.digits * BigInt(10) ** BigInt(q.ten - ten) * BigInt(2) ** BigInt(q.two - two);
  const [l, r] = [scaled(x), scaled(y)];
  return l < r ? -1 : l > r ? 1 : 0;
}

export const quantity: Field<string> = (r, v, p) => {
  const s = typeof v === 'number' ? String(v) : v;
  if (typeof s === 'string' && QUANTITY.test(s)) return s;
  return r.fail(p, `must be a Kubernetes quantity such as 100m, 64Mi or 1; got ${describe(v)}`);
};

export const quantities: Field<Record<string, string>> = (r, v, p) => {
  if (!isRecord(v))
    return r.fail(p, `must be a mapping of resource names to quantities; got ${describe(v)}`);
  const out: Record<string, string> = {};
  for (const [k, q] of Object.entries(v)) {
    const read = quantity(r, q, [...p, k]);
    if (read !== undefined) out[k] = read;
  }
  return out;
};

/** DNS-1123 label: container names, volume names, port names. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const dnsLabel = (max: number): Field<string> => {
  const s = str(
    DNS_LABEL,
    `a DNS-1123 label (lower-case letters, digits and '-', at most ${max} characters)`,
  );
  return (r, v, p) => {
    const read = s(r, v, p);
    if (read !== undefined && read.length > max)
      return r.fail(p, `must be at most ${max} characters; got ${read.length}`);
    return read;
  };
};

/**
 * An image reference: registry host (with optional port) and path in lower case, then an
 * optional tag (letters of either case, digits, _ . -) and an optional sha256 digest.
 */
export const IMAGE_REFERENCE =
  /^[a-z0-9]+([._-]+[a-z0-9]+)*(:[0-9]+)?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[\w][\w.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;

/** A port or port range list entry: "8080" or "9000-9100". */
export const PORT_RANGE = /^(\d{1,5})(-(\d{1,5}))?$/;
export function isPortRange(s: string): boolean {
  const m = PORT_RANGE.exec(s);
  if (!m) return false;
  const lo = Number(m[1]);
  const hi = m[3] === undefined ? lo : Number(m[3]);
  return lo >= 1 && hi <= 65535 && lo <= hi;
}
export const portRange: Field<string> = (r, v, p) => {
  const s = typeof v === 'number' ? String(v) : v;
  if (typeof s === 'string' && isPortRange(s)) return s;
  return r.fail(p, `must be a port (1-65535) or a range such as 9000-9100; got ${describe(v)}`);
};
