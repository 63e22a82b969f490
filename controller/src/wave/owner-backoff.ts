// How long the wave leaves an owner alone after the API server refused its write, and the
// shortest wait of any wave step (wave-runner.ts).

/**
 * An owner whose writes the API server refused `count` times in a row. Until `untilMs` it is
 * left out of the wave; after that it is an ordinary candidate again, and the count is kept
 * only so that its next refusal waits twice as long. A success, or the owner leaving the
 * caches, forgets it.
 */
export interface OwnerBackoff {
  count: number;
  untilMs: number;
}

/**
 * The shortest wait a wave step asks for, and the wait before planning again after a refusal or
 * a conflict (by then the watch has usually caught up with the write that conflicted). A step
 * that cannot make progress waits for an event (a watch) or a timer of at least this, so no
 * result of a step, whatever the clock or the caches say, can make the wave run back to back.
 */
export const MIN_RECHECK_MS = 1000;
/** Back-off of an owner whose patch the API server refused: 5 s doubling to 5 minutes. */
export const OWNER_BACKOFF_BASE_MS = 5000;
export const OWNER_BACKOFF_CAP_MS = 5 * 60_000;
