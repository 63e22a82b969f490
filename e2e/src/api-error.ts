// Reading errors from the API client: the HTTP status, and a message that keeps the server's reason.

import { ApiException } from '@kubernetes/client-node';

/** The HTTP status of a failed API call, or undefined for errors that are not API responses. */
export function statusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const { code } = error;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

export const isNotFound = (error: unknown): boolean => statusCode(error) === 404;
export const isConflict = (error: unknown): boolean => statusCode(error) === 409;
export const isForbidden = (error: unknown): boolean => statusCode(error) === 403;

/** The Status message the API server sent, or the error's own message. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body: unknown = error.body;
    const parsed: unknown = typeof body === 'string' ? safeJson(body) : body;
    if (typeof parsed === 'object' && parsed !== null && 'message' in parsed) {
      return `HTTP ${error.code}: ${String(parsed.message)}`;
    }
    return `HTTP ${error.code}: ${typeof body === 'string' ? body : error.message}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
