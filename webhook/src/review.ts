// AdmissionReview v1 on the wire: reading a request body strictly enough to answer 400 with a
// useful message, and building responses (allow, JSONPatch, warnings, denial).

import { isRecord, serializePatch, type AddOperation, type KubeObject } from '@outrigger/shared';

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
    super(message);
    this.name = 'BadReviewError';
  }
}

function readKind(value: unknown): GroupVersionKind {
  if (!isRecord(value) || typeof value.kind !== 'string' || typeof value.version !== 'string')
    throw new BadReviewError('request.kind must be {group, version, kind}');
  return {
    group: typeof value.group === 'string' ? value.group : '',
    version: value.version,
    kind: value.kind,
  };
}

function optionalObject(value: unknown, field: string): KubeObject | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isRecord(value)) throw new BadReviewError(`request.${field} must be an object`);
  return value;
}

const optionalString = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

/** Parses and checks a request body. Throws BadReviewError for anything malformed. */
export function parseReview(body: string): AdmissionRequest {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw new BadReviewError(`body is not JSON: ${(err as Error).message}`);
  }
  if (!isRecord(value)) throw new BadReviewError('body must be a JSON object (an AdmissionReview)');
  if (value.kind !== 'AdmissionReview')
    throw new BadReviewError(`kind must be AdmissionReview; got ${JSON.stringify(value.kind)}`);
  if (value.apiVersion !== ADMISSION_API_VERSION)
    throw new BadReviewError(
      `apiVersion must be ${ADMISSION_API_VERSION}; got ${JSON.stringify(value.apiVersion)} (set admissionReviewVersions: [v1] in the webhook configuration)`,
    );
  const r = value.request;
  if (!isRecord(r)) throw new BadReviewError('request is missing');
  return readRequest(r);
}

function readRequest(r: Record<string, unknown>): AdmissionRequest {
  if (typeof r.uid !== 'string' || r.uid === '') throw new BadReviewError('request.uid is missing');
  if (typeof r.operation !== 'string') throw new BadReviewError('request.operation is missing');
  const request: AdmissionRequest = {
    uid: r.uid,
    kind: readKind(r.kind),
    operation: r.operation,
    dryRun: r.dryRun === true,
  };
  const fields = {
    namespace: optionalString(r.namespace),
    name: optionalString(r.name),
    subResource: optionalString(r.subResource),
  };
  for (const [k, v] of Object.entries(fields))
    if (v !== undefined) request[k as keyof typeof fields] = v;
  const object = optionalObject(r.object, 'object');
  const oldObject = optionalObject(r.oldObject, 'oldObject');
  if (object) request.object = object;
  if (oldObject) request.oldObject = oldObject;
  return request;
}

/** Kubernetes truncates long warnings; keep each one readable within its limit. */
const MAX_WARNING = 256;
const clip = (w: string): string =>
  w.length <= MAX_WARNING ? w : `${w.slice(0, MAX_WARNING - 3)}...`;

export function allow(
  uid: string,
  patch: readonly AddOperation[] = [],
  warnings: readonly string[] = [],
): AdmissionResponse {
  const response: AdmissionResponse = { uid, allowed: true };
  if (patch.length > 0) {
    response.patchType = 'JSONPatch';
    response.patch = Buffer.from(serializePatch(patch)).toString('base64');
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
