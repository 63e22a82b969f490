// A log line that any client can cause as often as it likes, written at most once a second.

/**
 * At most one log line a second for something any client can cause as often as it likes; the
 * rest are counted into the next line (and all of them into the metrics).
 */
export class Throttled {
  private last = -Infinity;
  private suppressed = 0;

  constructor(
    private readonly intervalMs = 1000,
    private readonly now: () => number = Date.now,
  ) {}

  run(log: (suppressed: number) => void): void {
    const now = this.now();
    if (now - this.last < this.intervalMs) {
      this.suppressed++;
      return;
    }
    this.last = now;
    const suppressed = this.suppressed;
    this.suppressed = 0;
    log(suppressed);
  }
}
