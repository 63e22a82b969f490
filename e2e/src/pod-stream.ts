// A steady stream of pod creations into a namespace, for measuring admission while something
// else happens (webhook pods deleted, an upgrade, certificate renewals): every create is kept
// with its outcome, so a test can say how many failed and what the API server said. Each pod
// is deleted as soon as it is created: admission is what is measured, and on a real node the
// pods would otherwise fill it (each proxy requests CPU) until the webhook's own pods no longer
// fit.

import type { V1Pod } from '@kubernetes/client-node';
import { apiErrorWithStatus as errorMessage } from '@outrigger/kube';
import type { Cluster } from './cluster';
import { PAUSE_IMAGE } from './fixtures';
import { done, pending, waitFor } from './wait';

export interface Admission {
  name: string;
  /** When the create was sent. */
  at: number;
  ok: boolean;
  /** The API server's message when the create failed. */
  message?: string;
  /** The stored pod when it was created. */
  pod?: V1Pod;
}

export class PodStream {
  readonly admissions: Admission[] = [];
  private running = false;
  private loop: Promise<void> | undefined;
  private count = 0;

  constructor(
    private readonly cluster: Cluster,
    private readonly namespace: string,
    private readonly intervalMs = 500,
    private readonly image = PAUSE_IMAGE,
  ) {}

  start(): this {
    this.running = true;
    this.loop = this.run();
    return this;
  }

  /** Stops sending and waits for the create in flight; returns every admission. */
  async stop(): Promise<Admission[]> {
    this.running = false;
    await this.loop;
    return this.admissions;
  }

  get failures(): Admission[] {
    return this.admissions.filter((a) => !a.ok);
  }

  /** Resolves once `n` more creates have succeeded after this call (a positive signal). */
  async succeeded(n: number, timeoutMs = 120_000): Promise<void> {
    const admitted = (): number => this.admissions.filter((a) => a.ok).length;
    const wanted = admitted() + n;
    await waitFor(
      `${n} more pods admitted in ${this.namespace}`,
      () =>
        admitted() >= wanted
          ? done(undefined)
          : pending(
              `${wanted - admitted()} to go; last: ${this.admissions.at(-1)?.message ?? 'ok'}`,
            ),
      { timeoutMs, intervalMs: 100 },
    );
  }

  private async run(): Promise<void> {
    while (this.running) {
      const started = Date.now();
      await this.createOne();
      const wait = this.intervalMs - (Date.now() - started);
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async createOne(): Promise<void> {
    const name = `stream-${String(this.count++).padStart(4, '0')}`;
    const at = Date.now();
    try {
      const pod = await this.cluster.core.createNamespacedPod({
        namespace: this.namespace,
        body: {
          metadata: { name, labels: { app: 'stream' } },
          spec: {
            containers: [{ name: 'app', image: this.image }],
            terminationGracePeriodSeconds: 0,
          },
        },
      });
      this.admissions.push({ name, at, ok: true, pod });
      await this.cluster.core
        .deleteNamespacedPod({ name, namespace: this.namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined);
    } catch (error) {
      this.admissions.push({ name, at, ok: false, message: errorMessage(error) });
    }
  }
}

/**
 * Creates pods every `intervalMs` while `body` runs: `body` starts once 3 were admitted (the
 * stream flows) and the stream stops once 5 more were admitted after it (admission works again),
 * or when `body` fails. Resolves with the stopped stream, every admission in it.
 */
export async function streamPodsDuring(
  cluster: Cluster,
  namespace: string,
  intervalMs: number,
  body: (stream: PodStream) => Promise<void>,
): Promise<PodStream> {
  const stream = new PodStream(cluster, namespace, intervalMs).start();
  try {
    await stream.succeeded(3);
    await body(stream);
    await stream.succeeded(5);
  } finally {
    await stream.stop();
  }
  return stream;
}
