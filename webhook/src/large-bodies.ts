// Large request bodies are answered on a worker thread: JSON.parse of a few MiB takes tens to
// hundreds of milliseconds, during which the main thread could answer neither other requests
// nor the kubelet's probes. The worker has its own memory limit, so a body that would need
// more is refused instead of growing the process, and it is ended after a quiet spell, which
// hands its heap back to the system.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { AdmissionState, Endpoint } from './admit';
import type { Answer } from './answer';

/** The worker's heap: a body within the limits needs far less; more is refused. */
const WORKER_HEAP_MB = 64;
/** A worker with nothing to do for this long is ended, and its memory given back. */
const IDLE_MS = 15_000;

export interface WorkerContext {
  state: AdmissionState | undefined;
  seen: string[];
  onError: 'allow' | 'deny';
}

export type ToWorker =
  | { type: 'context'; context: WorkerContext }
  | { type: 'answer'; id: number; endpoint: Endpoint; body: Uint8Array; afterFetch: boolean };

export type FromWorker =
  { id: number; answer: Answer; body?: Uint8Array } | { id: number; error: string };

interface Job {
  worker: Worker;
  resolve: (r: { answer: Answer; body?: Uint8Array }) => void;
  reject: (err: Error) => void;
}

/** The compiled worker: beside this file in dist/, or in dist/ when this file runs from src/. */
function workerScript(): string {
  const candidates = [
    join(__dirname, 'large-body-worker.js'),
    join(__dirname, '..', 'dist', 'src', 'large-body-worker.js'),
  ];
  const found = candidates.find((f) => existsSync(f));
  if (!found)
    throw new Error(
      `large-body-worker.js not found in ${candidates.join(' or ')}: run npm run build`,
    );
  return found;
}

export class LargeBodyWorker {
  private worker: Worker | undefined;
  private readonly jobs = new Map<number, Job>();
  private nextId = 1;
  private sentVersion = -1;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly script = workerScript();

  /**
   * @param context the state to answer with, read when a body is sent
   * @param version changes whenever the context does, so it is sent again only then
   */
  constructor(
    private readonly context: () => WorkerContext,
    private readonly version: () => number,
  ) {}

  /** Answers `body`, whose buffer is handed to the worker (the caller must not use it after). */
  answer(
    endpoint: Endpoint,
    body: Buffer,
    afterFetch: boolean,
  ): Promise<{ answer: Answer; body?: Uint8Array }> {
    const worker = this.running();
    clearTimeout(this.idleTimer);
    if (this.sentVersion !== this.version()) {
      this.sentVersion = this.version();
      worker.postMessage({ type: 'context', context: this.context() } satisfies ToWorker);
    }
    const id = this.nextId++;
    // Transferred, not copied, when the body owns its whole buffer (as readBody's do).
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    const message: ToWorker = { type: 'answer', id, endpoint, body, afterFetch };
    return new Promise((resolve, reject) => {
      this.jobs.set(id, { worker, resolve, reject });
      worker.postMessage(message, whole ? [body.buffer as ArrayBuffer] : []);
    });
  }

  async stop(): Promise<void> {
    clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = undefined;
    await worker?.terminate();
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.script, {
      resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 8 },
    });
    worker.unref();
    worker.on('message', (m: FromWorker) => this.settle(m));
    worker.on('error', (err: Error) => this.lost(worker, err));
    worker.on('exit', () => this.lost(worker, new Error('the large-body worker exited')));
    this.worker = worker;
    this.sentVersion = -1;
    return worker;
  }

  private settle(message: FromWorker): void {
    const job = this.jobs.get(message.id);
    this.jobs.delete(message.id);
    if ('error' in message) job?.reject(new Error(message.error));
    else job?.resolve({ answer: message.answer, body: message.body });
    if (this.jobs.size === 0) {
      clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => void this.stop(), IDLE_MS).unref();
    }
  }

  /** The worker died (out of memory on a hostile body, or a bug): its jobs fail, the next starts anew. */
  private lost(worker: Worker, err: Error): void {
    if (this.worker === worker) this.worker = undefined;
    const outOfMemory = (err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY';
    for (const [id, job] of this.jobs) {
      if (job.worker !== worker) continue;
      this.jobs.delete(id);
      if (outOfMemory)
        job.resolve({
          answer: {
            kind: 'malformed',
            message: `reading the body needs more than the ${WORKER_HEAP_MB} MiB the webhook allows`,
          },
        });
      else job.reject(err);
    }
  }
}
