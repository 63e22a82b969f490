// The reviews the webhook benches send: what an API server sends for a Deployment's pod (about
// 6 KB with its defaults and managedFields), and the corpus pods when ../shared/corpus is there.

import { realisticReview } from '../test/realistic-review';
import { HAVE_CORPUS, corpusPods, review } from '../test/support';

export interface Workload {
  name: string;
  bodies: string[];
}

export function realisticBodies(): Workload {
  const bodies = Array.from({ length: 64 }, (_, i) =>
    JSON.stringify(realisticReview(`bench-${i}`, i)),
  );
  return { name: 'realistic', bodies };
}

export function corpusBodies(): Workload | undefined {
  if (!HAVE_CORPUS) return undefined;
  return { name: 'corpus', bodies: corpusPods().map(({ pod }) => review(pod)) };
}

export const averageBytes = (bodies: string[]): number =>
  bodies.reduce((n, b) => n + Buffer.byteLength(b), 0) / bodies.length;
