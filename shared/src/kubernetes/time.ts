// Times as Kubernetes writes them in annotations: RFC 3339, in whole seconds.

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** Milliseconds since the epoch, or undefined when the value is not an RFC 3339 time. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined || !RFC3339.test(value)) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

/** RFC 3339 in whole seconds, the way Kubernetes writes its own times. */
export const formatTime = (ms: number): string =>
  new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The earliest of the times given, or undefined when none is. */
export function earliest(times: readonly (number | undefined)[]): number | undefined {
  const known = times.filter((t) => t !== undefined);
  return known.length > 0 ? Math.min(...known) : undefined;
}
