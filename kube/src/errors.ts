// What an API error says: client-node's ApiException carries the server's Status document as
// its body, whose message names the object and the reason; anything else speaks for itself.

export function apiErrorMessage(err: unknown): string {
  const body = (err as { body?: unknown } | undefined)?.body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: unknown };
      if (typeof status.message === 'string') return status.message;
    } catch {
      // not a Status document
    }
  }
  return err instanceof Error ? err.message : String(err);
}

/** The HTTP status of an API error (client-node's ApiException carries it as `code`). */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'number' ? code : undefined;
}

/** 409: the object changed since it was read, or appeared before a create. */
export const isConflict = (err: unknown): boolean => httpStatus(err) === 409;
