// Timing for the injection benchmark: an operation run in batches of about BATCH_NS, after a
// warm-up, its results folded into a sink so that no work can be optimized away.

const BATCH_NS = 20e6; // each timed batch runs about 20 ms
export const BATCH_MS = BATCH_NS / 1e6;
const WARMUP_NS = 300e6;

export type Op = () => number;

/** Anything the operations return is folded in here, so no work can be optimized away. */
let sink = 0;

export function timeBatch(op: Op, iterations: number): number {
  let acc = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) acc += op();
  const elapsed = Number(process.hrtime.bigint() - start);
  sink = (sink + acc) % 1_000_003;
  return elapsed / iterations;
}

/** Warms the operation up, then returns how many iterations fill one batch. */
export function calibrate(op: Op): number {
  const start = process.hrtime.bigint();
  let iterations = 1;
  while (Number(process.hrtime.bigint() - start) < WARMUP_NS) {
    const perOp = timeBatch(op, iterations);
    iterations = Math.max(1, Math.min(iterations * 2, Math.round(BATCH_NS / Math.max(perOp, 1))));
  }
  return iterations;
}

/** Never negative: printing it when it is would keep the results alive. */
export const sinkValue = (): number => sink;
