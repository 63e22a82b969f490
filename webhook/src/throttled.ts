// A log line that something can cause as often as it likes (any client, a file read every
// second, a wait), written at most once an interval: the one way the webhook keeps its log
// readable.

/**
 * At most one log line an interval (a second by default); the rest are counted into the next
 * line (and all of them into the metrics). A line about another `topic` than the last one
 * logged (a new reason) is written at once.
 */
export class Throttled {
  private last = -Infinity;
  private suppressed = 0;
  private topic: string | undefined;

  constructor(
    private readonly intervalMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  run(log: (suppressed: number) => void, topic?: string): void {
    const now = this.now();
    if (now - this.last < this.intervalMs && topic === this.topic) {
      this.suppressed++;
      return;
    }
    this.last = now;
    this.topic = topic;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    log(suppressed);
  }

  /** What happened before is over: the next line is written at once. */
  reset(): void {
    this.last = -Infinity;
    this.topic = undefined;
    this.suppressed = 0;
  }
}
