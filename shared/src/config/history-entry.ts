// One entry of the revision history ConfigMap as text: the proxy's (revision-history.ts) and the
// sidecar sets' (set-history.ts) are read through here.

/**
 * The entry `decode` makes of the text's JSON, or why it cannot be read. Anything a hand edit
 * can put in the history is refused as an entry, never thrown: the reader runs in the watch of
 * both components, and a value nested deep enough overflows the stack in the parse or in the
 * decoding of what it parsed, both of which are caught here.
 */
export function readEntry<T>(
  key: string,
  text: string,
  decode: (value: unknown) => T | string,
): T | string {
  try {
    return decode(JSON.parse(text));
  } catch (err) {
    return err instanceof SyntaxError
      ? `entry ${key} is not JSON`
      : `entry ${key} could not be read (${err instanceof Error ? err.name : 'error'})`;
  }
}
