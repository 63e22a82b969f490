// Watches files by reading them on an interval and comparing contents. Polling, not inotify:
// Secret and ConfigMap volumes change by swapping a symlink, which file watchers miss, and
// fs.watchFile does not fire inside every runtime (jest's, for one).

import { readFile } from 'node:fs/promises';

export class FilePoller {
  private timer: NodeJS.Timeout | undefined;
  private last: string | undefined;

  constructor(
    private readonly paths: readonly string[],
    private readonly onChange: (contents: string[]) => void,
    private readonly onError: (err: Error) => void,
    private readonly intervalMs = 1000,
  ) {}

  /** Reads now (calling onChange or onError), then keeps polling. */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => void this.poll(), this.intervalMs);
    this.timer.unref();
  }

  async poll(): Promise<void> {
    let contents: string[];
    try {
      contents = await Promise.all(this.paths.map((p) => readFile(p, 'utf8')));
    } catch (err) {
      this.onError(err as Error);
      return;
    }
    const key = JSON.stringify(contents);
    if (key === this.last) return;
    this.last = key;
    // A poll is not awaited on its interval: a throw here would end the process.
    try {
      this.onChange(contents);
    } catch (err) {
      this.onError(err instanceof Error ? err : new Error(String(err)));
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
