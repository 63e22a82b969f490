// The thread that answers large request bodies, so that parsing megabytes never stalls the
// main thread's other requests and probes. It holds a copy of the admission state, sent by the
// main thread before the first body that needs it, and answers each body with answerBody().

import { parentPort } from 'node:worker_threads';
import { frozenSnapshot, makeSnapshot } from '@outrigger/shared';
import type { AdmissionState } from './admit';
import { answerBody } from './answer';
import { freeNow } from './body';
import type { ToWorker, FromWorker } from './large-bodies';

let state: AdmissionState | undefined;
let seen = new Set<string>();
let onError: 'allow' | 'deny' = 'allow';

function handle(message: ToWorker): void {
  if (message.type === 'context') {
    const c = message.context;
    state = c.state && {
      ...c.state,
      // Frozen again here: injection shares the configuration's parts between patches.
      snapshot: makeSnapshot(c.state.snapshot.config),
      // A pinned snapshot keeps its revision: its configuration alone would hash otherwise.
      pinned: new Map(
        [...(c.state.pinned ?? [])].map(([r, p]) => [r, frozenSnapshot(p.config, p.revision)]),
      ),
    };
    seen = new Set(c.seen);
    onError = c.onError;
    return;
  }
  const text = Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
  let reply: FromWorker;
  try {
    const answer = answerBody(message.endpoint, text.toString('utf8'), {
      state: () => state,
      onError,
      hasSeen: (r) => seen.has(r),
      afterFetch: message.afterFetch,
    });
    reply = { id: message.id, answer };
  } catch (err) {
    reply = { id: message.id, error: err instanceof Error ? err.message : String(err) };
  }
  // A body that must wait for a revision goes back to the main thread, which sends it again.
  if ('answer' in reply && reply.answer.kind === 'needs-revision') {
    parentPort?.postMessage({ ...reply, body: message.body }, [message.body.buffer as ArrayBuffer]);
  } else {
    // Freed now: this thread's collector may not run again for many bodies.
    freeNow(message.body);
    parentPort?.postMessage(reply);
  }
}

parentPort?.on('message', handle);
