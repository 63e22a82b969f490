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
