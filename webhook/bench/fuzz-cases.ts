// The hostile inputs of the fuzz suite (webhook/test/fuzz.test.ts, hostile.test.ts) and of
// `make fuzz` (fuzz.ts): classes of AdmissionReview bodies, each with the answer the webhook owes
// it. Deterministic from a seed, so a failure can be replayed.

import { realisticReview } from '@outrigger/testkit';
import { MAX_VALUES } from '../src/review';

/** What the webhook must answer a case with. */
export type Expect = 'allowed' | 'bad-request' | 'allowed-or-bad' | 'too-large';

export interface FuzzCase {
  kind: string;
  body: string;
  expect: Expect;
  /** The uid the answer must echo, when it is a 200. */
  uid?: string;
}

/** A small seeded generator (mulberry32): the same seed gives the same cases. */
export class Random {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  int(below: number): number {
    return Math.floor(this.next() * below);
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
}

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const nested = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** A value of a random type, sometimes large or deep: what a mutation writes into a field. */
export function randomValue(r: Random): Json {
  switch (r.int(9)) {
    case 0:
      return null;
    case 1:
      return r.next() < 0.5;
    case 2:
      return r.pick([0, -1, 1.5, 1e308, 2 ** 53 + 1]);
    case 3:
      return r.pick(['', 'x', '\u0000', '\ud800', 'ünïcødé', '{"a":1}']);
    case 4:
      return 'x'.repeat(r.int(100_000));
    case 5:
      return [];
    case 6:
      return {};
    case 7:
      return Array.from({ length: r.int(50) }, (_, i) => (i % 2 ? 'a' : { name: 1 }));
    default:
      return JSON.parse(nested(1 + r.int(60))) as Json;
  }
}

/** Every path to a value inside `value`, as keys and indexes. */
function paths(value: Json, prefix: (string | number)[] = [], out: (string | number)[][] = []) {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((v, i) => paths(v, [...prefix, i], out));
  else if (value !== null && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) paths(v, [...prefix, k], out);
  return out;
}

function setAt(root: Json, path: (string | number)[], value: Json): Json {
  if (path.length === 0) return value;
  let node = root as Record<string | number, Json>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, Json>;
  node[path[path.length - 1] as string | number] = value;
  return root;
}

const REVIEW_PATHS = paths(realisticReview('x') as Json);

/** A realistic review with one field, anywhere, replaced by `value`. */
export function mutatedReview(r: Random, uid: string, value: Json): FuzzCase {
  const review = realisticReview(uid) as Json;
  const path = r.pick(REVIEW_PATHS);
  // The uid itself stays, so a 200 can still be matched to its request.
  const target = path.join('.') === 'request.uid' ? ['request', 'object', 'spec'] : path;
  return {
    kind: 'mutated',
    body: JSON.stringify(setAt(review, target, value)),
    expect: 'allowed-or-bad',
    uid,
  };
}

function valid(uid: string): FuzzCase {
  return { kind: 'valid', body: JSON.stringify(realisticReview(uid)), expect: 'allowed', uid };
}

function deep(r: Random): FuzzCase {
  const depth = 101 + r.int(20_000);
  const where = r.pick(['kind', 'apiVersion', 'request', 'object', 'label']);
  const review = JSON.stringify(realisticReview('deep'));
  const placeholder = '"__DEEP__"';
  const withMark = {
    kind: () => `{"kind":${placeholder}}`,
    apiVersion: () => `{"kind":"AdmissionReview","apiVersion":${placeholder}}`,
    request: () => review.replace('"request":{', `"request":{"deep":${placeholder},`),
    object: () => review.replace('"spec":{', `"spec":{"deep":${placeholder},`),
    label: () => review.replace('"tier":"backend"', `"tier":${placeholder}`),
  }[where as 'kind']();
  return {
    kind: `deep-${where}`,
    body: withMark.replace(placeholder, nested(depth)),
    expect: 'bad-request',
  };
}

function wrongEnvelope(r: Random, uid: string): FuzzCase {
  const review = realisticReview(uid) as Record<string, Json>;
  const request = review.request as Record<string, Json>;
  const field = r.pick(['kind', 'apiVersion', 'request', 'uid', 'operation', 'reqKind', 'object']);
  const bad = r.pick([7, true, [], [1], { a: 1 }, null] as Json[]);
  if (field === 'kind' || field === 'apiVersion' || field === 'request') review[field] = bad;
  else if (field === 'reqKind') request.kind = bad === null ? 'Pod' : bad;
  else if (field === 'object') request.object = r.pick([7, 'pod', [], true] as Json[]);
  else request[field] = bad;
  return { kind: `wrong-${field}`, body: JSON.stringify(review), expect: 'bad-request' };
}

function garbage(r: Random): FuzzCase {
  const review = JSON.stringify(realisticReview('cut'));
  const body = r.pick([
    () => review.slice(0, 1 + r.int(review.length - 2)),
    () => Buffer.from(Array.from({ length: r.int(2000) }, () => r.int(256))).toString('latin1'),
    () => '',
    () => 'null',
    () => '[]',
    () => '"AdmissionReview"',
    () => `${review}}`,
  ])();
  return { kind: 'garbage', body, expect: 'bad-request' };
}

/** A valid review with one large value in a field the webhook does not read. */
function huge(r: Random, uid: string, limit: number): FuzzCase {
  const review = realisticReview(uid) as { request: { object: Record<string, Json> } };
  const size = Math.floor(limit * (0.2 + 0.7 * r.next()));
  const shape = r.pick(['string', 'array', 'objects']);
  const counts: Record<string, number> = {
    string: 1,
    array: Math.floor(size / 2),
    objects: Math.floor(size / 8),
  };
  const items = counts[shape] ?? 0;
  // As the webhook counts them: an object opens with '{' and follows a ','.
  const values = shape === 'objects' ? 2 * items : items;
  review.request.object.status = {
    string: () => ({ message: 'x'.repeat(size) }),
    array: () => ({ numbers: Array.from({ length: items }, () => 0) }),
    objects: () => ({ items: Array.from({ length: items }, () => ({})) }),
  }[shape as 'string']();
  // Bodies of more values than a review may hold are refused before they are parsed.
  const expect = values > MAX_VALUES ? 'bad-request' : 'allowed';
  return { kind: `huge-${shape}`, body: JSON.stringify(review), expect, uid };
}

/** A valid review padded with whitespace to exactly `limit` bytes, or one byte over it. */
function atLimit(uid: string, limit: number, over: boolean): FuzzCase {
  const body = JSON.stringify(realisticReview(uid));
  const size = over ? limit + 1 : limit;
  return {
    kind: over ? 'over-limit' : 'at-limit',
    body: `${body}${' '.repeat(size - body.length)}`,
    expect: over ? 'too-large' : 'allowed',
    uid,
  };
}

export interface MixOptions {
  /** The webhook's --max-body-bytes. */
  limit: number;
  /** Share of large bodies (huge, at and over the limit), 0 to 1. */
  largeShare: number;
}

/** Case number `i` of the mix: mostly valid and mutated reviews, some of every hostile class. */
export function mixCase(r: Random, i: number, o: MixOptions): FuzzCase {
  const uid = `fuzz-${i}`;
  if (r.next() < o.largeShare) {
    const roll = r.next();
    if (roll < 0.8) return huge(r, uid, o.limit);
    return atLimit(uid, o.limit, roll >= 0.9);
  }
  const roll = r.next();
  if (roll < 0.4) return valid(uid);
  if (roll < 0.7) return mutatedReview(r, uid, randomValue(r));
  if (roll < 0.8) return deep(r);
  if (roll < 0.9) return wrongEnvelope(r, uid);
  return garbage(r);
}

/** A valid realistic review: what the API server sends. */
export function realisticCase(uid: string): FuzzCase {
  return valid(uid);
}

/** A valid review of a pod with an annotation of `bytes` (a large one, but a real one). */
export function largeRealisticCase(uid: string, bytes: number): FuzzCase {
  const review = realisticReview(uid) as {
    request: { object: { metadata: { annotations: Record<string, string> } } };
  };
  review.request.object.metadata.annotations['example.com/payload'] = 'x'.repeat(bytes);
  return { kind: 'valid-large', body: JSON.stringify(review), expect: 'allowed', uid };
}
