// A quantile of a sample by the nearest-rank method: the smallest value that at least the
// share `q` of the sample is less than or equal to. A value of the sample, never interpolated,
// so a p99 of latencies is a latency some request really had.

/** The value at quantile `q` (0 to 1) of `values` (in any order), or NaN when there are none. */
export function quantile(values: readonly number[], q: number): number {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile ${q} is not between 0 and 1`);
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[rank - 1] ?? Number.NaN;
}
