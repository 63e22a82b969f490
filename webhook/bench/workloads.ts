// The reviews the webhook benches send: what an API server sends for a Deployment's pod (about
// 6 KB with its defaults and managedFields), and the corpus pods when ../shared/corpus is there.

import { TEMPLATE_PATHS } from '@outrigger/shared';
import { admissionReview, corpusPods, haveCorpus, realisticReview } from '@outrigger/testkit';

export interface Workload {
  name: string;
  bodies: string[];
}

/**
 * Pods of one Deployment, as its rollout or scale-up creates them; with `owners`, `count` pods
 * each of a Deployment of its own (the webhook builds a patch once per owner and pod shape, so
 * this is its worst case).
 */
export function realisticBodies(options: { count?: number; owners?: boolean } = {}): Workload {
  const { count = 64, owners = false } = options;
  const bodies = Array.from({ length: count }, (_, i) =>
    JSON.stringify(realisticReview(`bench-${i}`, i, owners ? `checkout-${i}` : 'checkout')),
  );
  return { name: owners ? `realistic, ${count} owners` : 'realistic', bodies };
}

export function corpusBodies(): Workload | undefined {
  if (!haveCorpus()) return undefined;
  return { name: 'corpus', bodies: corpusPods(TEMPLATE_PATHS).map((p) => admissionReview(p.pod)) };
}

export const averageBytes = (bodies: string[]): number =>
  bodies.reduce((n, b) => n + Buffer.byteLength(b), 0) / bodies.length;
