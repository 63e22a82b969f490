// `make bench-parse`: what one body answered on the main thread can cost it. Bodies of up to
// SMALL_BODY_BYTES are parsed there; this times JSON.parse, and parseReview (the parse and the
// checks the webhook adds), on bodies of that length shaped in the ways that cost a parser the
// most per byte, beside a realistic review of the same length, in rounds that alternate their
// order. It shows that nesting costs no more than other structure: what bounds a request's
// time on the main thread is the body's length.

import { performance } from 'node:perf_hooks';
import { SMALL_BODY_BYTES } from '../src/body';
import { BadReviewError, MAX_NESTING, parseReview } from '../src/review';
import { median, realisticReview } from '@outrigger/testkit';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const BATCH_MS = 200;

/** `unit` repeated, comma-separated, inside `[` `]`, to `length` characters at most. */
function repeated(unit: string, length: number): string {
  const count = Math.floor((length - 2 + 1) / (unit.length + 1));
  return `[${Array.from({ length: count }, () => unit).join(',')}]`;
}

const arrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const objects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** A realistic review made `length` long with more containers of its own kind. */
function realistic(length: number): string {
  const review = realisticReview('parse-cost') as {
    request: { object: { spec: { containers: unknown[] } } };
  };
  const { spec } = review.request.object;
  const [container] = spec.containers;
  let body = JSON.stringify(review);
  while (body.length < length) {
    spec.containers.push(container);
    const next = JSON.stringify(review);
    if (next.length > length) break;
    body = next;
  }
  return body;
}

/** A realistic review with `inner(room)` in a field nothing reads, `length` long at most. */
function around(length: number, inner: (room: number) => string): string {
  const review = JSON.stringify(realisticReview('parse-cost'));
  const at = review.indexOf('"spec":{') + '"spec":{'.length;
  const room = length - review.length - '"deep":,'.length;
  return `${review.slice(0, at)}"deep":${inner(room)},${review.slice(at)}`;
}

function bodies(length: number): [string, string][] {
  return [
    ['a realistic review', realistic(length)],
    ['arrays nested to the end', around(length, (room) => arrays(Math.floor(room / 2)))],
    ['objects nested to the end', around(length, (room) => objects(Math.floor((room - 1) / 6)))],
    [
      `arrays ${MAX_NESTING - 10} deep, side by side`,
      around(length, (room) => repeated(arrays(MAX_NESTING - 10), room)),
    ],
    ['empty arrays side by side', around(length, (room) => repeated('[]', room))],
    ['empty objects side by side', around(length, (room) => repeated('{}', room))],
    ['zeros in one array', around(length, (room) => repeated('0', room))],
  ];
}

/** Milliseconds a call of `fn` takes, over batches of about BATCH_MS. */
function time(fn: () => void): number {
  let calls = 0;
  const start = performance.now();
  do {
    fn();
    calls++;
  } while (performance.now() - start < BATCH_MS);
  return (performance.now() - start) / calls;
}

function verdict(body: string): string {
  try {
    parseReview(body);
    return 'answered (200)';
  } catch (err) {
    if (err instanceof BadReviewError) return `400: ${err.message}`;
    throw err;
  }
}

const spread = (xs: number[]): string =>
  `${Math.min(...xs).toFixed(2)}-${Math.max(...xs).toFixed(2)}`;

function main(): void {
  const cases = bodies(SMALL_BODY_BYTES);
  const parse: number[][] = cases.map(() => []);
  const review: number[][] = cases.map(() => []);
  const run = (i: number): void => {
    const body = cases[i]?.[1] ?? '';
    parse[i]?.push(time(() => JSON.parse(body) as unknown));
    review[i]?.push(time(() => verdict(body)));
  };
  for (let i = 0; i < cases.length; i++) run(i); // warm-up, not kept
  for (const times of [...parse, ...review]) times.length = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const order = cases.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) run(i);
  }
  console.log(
    `bodies of ${SMALL_BODY_BYTES} characters at most (SMALL_BODY_BYTES), ${ROUNDS} rounds ` +
      `alternating their order, Node ${process.version}; ms a body, median (min-max)`,
  );
  console.log(`${'body'.padEnd(36)} ${'JSON.parse'.padEnd(20)} ${'parseReview'.padEnd(20)} answer`);
  cases.forEach(([name, body], i) => {
    const p = parse[i] ?? [];
    const r = review[i] ?? [];
    const cell = (xs: number[]): string => `${median(xs).toFixed(2)} (${spread(xs)})`.padEnd(20);
    console.log(`${name.padEnd(36)} ${cell(p)} ${cell(r)} ${verdict(body)}`);
  });
}

main();
