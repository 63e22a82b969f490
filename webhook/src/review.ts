// AdmissionReview v1 on the wire: reading a request body strictly enough to answer 400 with a
// useful message, and building responses (allow, JSONPatch, warnings, denial).

import {
  describe,
  isRecord,
  isStampedKind,
  podShapeIssue,
  serializePatch,
  workloadShapeIssue,
  type AddOperation,
  type KubeObject,
} from '@outrigger/shared';

export const ADMISSION_API_VERSION = 'admission.k8s.io/v1';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  operation: string;
  namespace?: string;
  name?: string;
  subResource?: string;
  dryRun?: boolean;
  object?: KubeObject;
  oldObject?: KubeObject;
}

export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
  status?: { code: number; message: string };
}

export interface AdmissionReviewResponse {
  apiVersion: typeof ADMISSION_API_VERSION;
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** A body that is not an AdmissionReview v1 we can answer: the server turns it into a 400. */
export class BadReviewError extends Error {
  constructor(message: string) {
    // Without a stack trace: only the message is ever used, and a client can send malformed
    // bodies as fast as it likes (capturing the stack cost about 40 µs of each such request).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.name = 'BadReviewError';
  }
}

/**
 * Deeper than any Pod or workload the API server sends (one with managedFields reaches about
 * 15), shallow enough that no recursive reader of the parsed value can run out of stack.
 */
export const MAX_NESTING = 100;

/**
 * Far more values than any Pod or workload holds (a real pod has a few hundred; the API
 * server's 3 MiB limit allows more only for objects made of almost nothing but punctuation),
 * few enough that parsing takes tens of milliseconds and a few tens of MiB at most.
 */
export const MAX_VALUES = 200_000;

/** The deepest nesting and the number of values (about) in a JSON text; strings skipped whole. */
export function jsonStructure(body: string): { depth: number; values: number } {
  let depth = 0;
  let deepest = 0;
  let values = 1;
  for (let i = 0; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (c === 0x22) i = stringEnd(body, i);
    else if (c === 0x5b || c === 0x7b) {
      values++;
      deepest = Math.max(deepest, ++depth);
    } else if (c === 0x5d || c === 0x7d) depth--;
    else if (c === 0x2c) values++;
  }
  return { depth: deepest, values };
}

/** The index of the quote that closes the string opened at `open` (or the end of the text). */
function stringEnd(body: string, open: number): number {
  let i = open;
  for (;;) {
    i = body.indexOf('"', i + 1);
    if (i < 0) return body.length;
    let backslashes = 0;
    while (body.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
}

/** Refuses, before parsing, a text whose parsed value would be too deep or too large to read. */
function checkStructure(body: string): void {
  const { depth, values } = jsonStructure(body);
  if (depth > MAX_NESTING) throw tooDeep();
  if (values > MAX_VALUES)
    throw new BadReviewError(`body holds more than ${MAX_VALUES} values; no Pod comes close`);
}

const tooDeep = (): BadReviewError =>
  new BadReviewError(`body nests arrays and objects deeper than ${MAX_NESTING} levels`);

/**
 * Whether a parsed value nests arrays and objects more than `limit` levels deep (the value itself
 * is the first level). It looks no deeper than that, so its recursion stays as shallow as the
 * limit; a scalar is never looked into, which keeps it to about 2 µs a realistic review.
 */
export function nestsDeeperThan(value: object, limit: number): boolean {
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (const item of value as unknown[])
      if (typeof item === 'object' && item !== null && nestsDeeperThan(item, limit - 1))
        return true;
    return false;
  }
  const record = value as Record<string, unknown>;
  for (const key in record) {
    const field = record[key];
    if (typeof field === 'object' && field !== null && nestsDeeperThan(field, limit - 1))
      return true;
  }
  return false;
}

/**
 * Below this length a text cannot hold more than MAX_VALUES values (each takes a character at
 * least), so it is not counted before parsing; every real review is far below it.
 */
const COUNTED_FROM_LENGTH = MAX_VALUES;

function readKind(value: unknown): GroupVersionKind {
  if (!isRecord(value) || typeof value.kind !== 'string' || typeof value.version !== 'string')
    throw new BadReviewError(
      `request.kind must be {group, version, kind} strings; got ${describe(value)}`,
    );
  if (value.group !== undefined && typeof value.group !== 'string')
    throw new BadReviewError(`request.kind.group must be a string; got ${describe(value.group)}`);
  return { group: value.group ?? '', version: value.version, kind: value.kind };
}

function optionalObject(value: unknown, field: string): KubeObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value))
    throw new BadReviewError(`request.${field} must be an object; got ${describe(value)}`);
  return value;
}

function optionalString(raw: Record<string, unknown>, field: string): string | undefined {
  const v = raw[field];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string')
    throw new BadReviewError(`request.${field} must be a string; got ${describe(v)}`);
  return v;
}

/** Parses and checks a request body. Throws BadReviewError for anything malformed. */
export function parseReview(body: string): AdmissionRequest {
  // Only a long text can hold more than MAX_VALUES values: it is scanned before parsing. A
  // shorter one is parsed first (V8's JSON.parse does not recurse, however deep the text nests)
  // and its nesting measured on the value, before anything that may recurse over it reads it.
  // Parsing first costs a deep text no more than any text of its length made of empty arrays
  // at a legal depth: the length, not the nesting, bounds what one request costs the main
  // thread (docs/benchmarks.md, "Body parsing"; and Webhook, "What an admission's parts cost",
  // row "the nesting check").
  const counted = body.length >= COUNTED_FROM_LENGTH;
  if (counted) checkStructure(body);
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw new BadReviewError(`body is not JSON: ${(err as Error).message.slice(0, 200)}`);
  }
  if (
    !counted &&
    typeof value === 'object' &&
    value !== null &&
    nestsDeeperThan(value, MAX_NESTING)
  )
    throw tooDeep();
  if (!isRecord(value)) throw new BadReviewError('body must be a JSON object (an AdmissionReview)');
  if (value.kind !== 'AdmissionReview')
    throw new BadReviewError(`kind must be AdmissionReview; got ${describe(value.kind)}`);
  if (value.apiVersion !== ADMISSION_API_VERSION)
    throw new BadReviewError(
      `apiVersion must be ${ADMISSION_API_VERSION}; got ${describe(value.apiVersion)} (set admissionReviewVersions: [v1] in the webhook configuration)`,
    );
  const r = value.request;
  if (!isRecord(r)) throw new BadReviewError(`request must be an object; got ${describe(r)}`);
  return readRequest(r);
}

function readRequest(raw: Record<string, unknown>): AdmissionRequest {
  if (typeof raw.uid !== 'string' || raw.uid === '')
    throw new BadReviewError(`request.uid must be a non-empty string; got ${describe(raw.uid)}`);
  if (typeof raw.operation !== 'string')
    throw new BadReviewError(`request.operation must be a string; got ${describe(raw.operation)}`);
  if (raw.dryRun !== undefined && raw.dryRun !== null && typeof raw.dryRun !== 'boolean')
    throw new BadReviewError(`request.dryRun must be true or false; got ${describe(raw.dryRun)}`);
  const request: AdmissionRequest = {
    uid: raw.uid,
    kind: readKind(raw.kind),
    operation: raw.operation,
    dryRun: raw.dryRun === true,
  };
  for (const field of ['namespace', 'name', 'subResource'] as const) {
    const v = optionalString(raw, field);
    if (v !== undefined) request[field] = v;
  }
  const object = optionalObject(raw.object, 'object');
  const oldObject = optionalObject(raw.oldObject, 'oldObject');
  if (object) request.object = object;
  if (oldObject) request.oldObject = oldObject;
  checkShape(request);
  return request;
}

/** Checks the fields admission will read, for the kinds it handles; others pass untouched. */
function checkShape(request: AdmissionRequest): void {
  const { kind, object, oldObject } = request;
  const shapeIssue =
    kind.group === '' && kind.kind === 'Pod'
      ? podShapeIssue
      : kind.group === 'apps' && isStampedKind(kind.kind)
        ? workloadShapeIssue
        : undefined;
  if (!shapeIssue) return;
  const issue =
    (object && shapeIssue(object, 'request.object')) ??
    (oldObject && shapeIssue(oldObject, 'request.oldObject'));
  if (issue) throw new BadReviewError(issue);
}

/** Kubernetes truncates long warnings; keep each one readable within its limit. */
const MAX_WARNING = 256;
const clip = (w: string): string =>
  w.length <= MAX_WARNING ? w : `${w.slice(0, MAX_WARNING - 3)}...`;

/** The base64 of frozen patches, which injection shares between pods (shared/src/admission/inject.ts). */
const encoded = new WeakMap<readonly AddOperation[], string>();

/** The patch as base64 of its JSON, as the response carries it; once for a shared patch. */
function encodedPatch(patch: readonly AddOperation[]): string {
  const shared = Object.isFrozen(patch);
  const known = shared ? encoded.get(patch) : undefined;
  if (known !== undefined) return known;
  const base64 = Buffer.from(serializePatch(patch)).toString('base64');
  if (shared) encoded.set(patch, base64);
  return base64;
}

export function allow(
  uid: string,
  patch: readonly AddOperation[] = [],
  warnings: readonly string[] = [],
): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = encodedPatch(patch);
  }
  if (warnings.length > 0) response.warnings = warnings.map(clip);
  return response;
}

export function deny(uid: string, code: number, message: string): AdmissionResponse {
  return { uid, allowed: false, status: { code, message } };
}

export function wrap(response: AdmissionResponse): AdmissionReviewResponse {
  return { apiVersion: ADMISSION_API_VERSION, kind: 'AdmissionReview', response };
}

const EMPTY_PATCH = '"patch":""';

/**
 * The answer's body: `JSON.stringify(wrap(response))`, byte for byte, without JSON.stringify
 * scanning the patch, which is most of the answer and base64 (nothing in it needs escaping).
 * The patch goes in where an empty one was serialized: `"patch":""` cannot occur earlier, as
 * every quote inside a string is escaped.
 */
export function reviewJson(response: AdmissionResponse): string {
  const { patch } = response;
  if (patch === undefined || patch === '') return JSON.stringify(wrap(response));
  const json = JSON.stringify(wrap({ ...response, patch: '' }));
  const at = json.indexOf(EMPTY_PATCH) + EMPTY_PATCH.length - 1;
  return `${json.slice(0, at)}${patch}${json.slice(at)}`;
}
