// One entry of the revision history ConfigMap as text: the proxy's (revision-history.ts) and the
// sidecar sets' (set-history.ts) are read through here.

/**
 * An entry's JSON, or why it cannot be read. Anything a hand edit can put in the history is
 * refused as an entry, never thrown: the reader runs in the watch of both components, and a
 * value nested deep enough overflows the stack.
 */
export function parseEntry(key: string, text: string): { value: unknown } | string {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (err) {
    return err instanceof SyntaxError
      ? `entry ${key} is not JSON`
      : `entry ${key} could not be read (${err instanceof Error ? err.name : 'error'})`;
  }
}
