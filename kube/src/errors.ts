// What an API error says: an ApiError (api-client.ts), like the client library's ApiException
// in the end-to-end suites, carries the server's Status document as its body, whose message
// names the object and the reason; anything else speaks for itself.
// And what kind of failure it is: a conflict, a refusal of the request, or trouble on the way.

/** The message of the Status document an API error carries as its body, if it carries one. */
function statusMessage(err: unknown): string | undefined {
  const body = (err as { body?: unknown } | undefined)?.body;
  if (typeof body !== 'string') return undefined;
  try {
    const status = JSON.parse(body) as { message?: unknown };
    if (typeof status.message === 'string') return status.message;
  } catch {
    // not a Status document
  }
  return undefined;
}

export function apiErrorMessage(err: unknown): string {
  return statusMessage(err) ?? (err instanceof Error ? err.message : String(err));
}

/**
 * The message after the HTTP status (`HTTP 422: ...`) when the error is an API server's answer,
 * for reports that must tell a refusal from trouble; a body that is no Status document is given
 * as it came.
 */
export function apiErrorWithStatus(err: unknown): string {
  const status = httpStatus(err);
  if (status === undefined) return apiErrorMessage(err);
  const body = (err as { body?: unknown }).body;
  const raw = typeof body === 'string' && body !== '' ? body : undefined;
  return `HTTP ${status}: ${statusMessage(err) ?? raw ?? apiErrorMessage(err)}`;
}

/** The HTTP status of an API error (ApiError and ApiException carry it as `code`). */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** 404: the object (or its namespace) does not exist. */
export const isNotFound = (err: unknown): boolean => httpStatus(err) === 404;

/** 403: the caller may not do this (RBAC, usually). */
export const isForbidden = (err: unknown): boolean => httpStatus(err) === 403;

/** 409: the object changed since it was read, or appeared before a create. */
export const isConflict = (err: unknown): boolean => httpStatus(err) === 409;

/**
 * Statuses that say nothing about the request itself: the credentials (401), a timeout (408),
 * the object changed since it was read (409: decide again), throttling (429).
 */
const NOT_A_REFUSAL = new Set([401, 408, 409, 429]);

/**
 * Whether the API server refused the request itself (validation, an admission policy, RBAC, a
 * quota, an object gone): a 4xx but those above. Network errors carry no status and a 5xx is
 * the server's own trouble: retried, never held against the object.
 */
export function isRefusal(err: unknown): boolean {
  const status = httpStatus(err);
  return status !== undefined && status >= 400 && status < 500 && !NOT_A_REFUSAL.has(status);
}
