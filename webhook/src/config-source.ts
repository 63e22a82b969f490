// Where the injector configuration comes from (a file or the default here; a ConfigMap in
// config-map-source.ts) and the store that validates each new version: an invalid one is
// refused with every error logged, and the last good one stays in force.

import { FilePoller } from '@outrigger/kube/without-api';
import {
  DEFAULT_CONFIG_YAML,
  LastGoodConfig,
  formatIssue,
  frozenSnapshot,
  parseConfig,
  type ConfigSnapshot,
} from '@outrigger/shared';
import type { Logger } from './log';
import type { WebhookMetrics } from './metrics';
import { Throttled } from './throttled';

/** How often an unchanged reason for an unreadable configuration is logged again. */
const UNREADABLE_LOG_EVERY_MS = 60_000;

export class ConfigStore {
  private snapshot: ConfigSnapshot | undefined;
  private readonly good = new LastGoodConfig();
  private readonly seen = new Set<string>();
  private readonly listeners: ((s: ConfigSnapshot) => void)[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly metrics: WebhookMetrics,
  ) {}

  get current(): ConfigSnapshot | undefined {
    return this.snapshot;
  }

  /** Whether this revision was ever in force here. */
  hasSeen(revision: string): boolean {
    return this.seen.has(revision);
  }

  /** Every revision ever in force here. */
  get seenRevisions(): string[] {
    return [...this.seen];
  }

  onChange(listener: (s: ConfigSnapshot) => void): void {
    this.listeners.push(listener);
  }

  /** Offers a new version of the configuration text; returns whether it was taken. */
  offer(text: string, source: string): boolean {
    const result = parseConfig(text);
    if (!result.ok) {
      this.metrics.configReloadFailures.inc({ source });
      this.logger.error(`configuration refused; ${this.keeping()}`, {
        source,
        errors: result.errors.map(formatIssue),
        revision: this.snapshot?.revision ?? null,
      });
      return false;
    }
    this.unreadableLog.reset(); // read again: a new failure is news
    const previous = this.snapshot;
    if (!this.good.offer(result.config)) return true;
    if (previous && text.trim() === '')
      this.logger.warn('configuration is empty: every setting takes its default', {
        source,
        previous: previous.revision,
      });
    // The revision LastGoodConfig hashed as it took the configuration: not hashed again.
    const next = frozenSnapshot(result.config, this.good.inForce?.revision ?? '');
    this.snapshot = next;
    this.seen.add(next.revision);
    this.metrics.setRevision(next.revision);
    this.logger.info('configuration in force', { source, revision: next.revision });
    for (const l of this.listeners) l(next);
    return true;
  }

  /** What stays in force after a refusal. */
  private keeping(): string {
    return this.snapshot ? 'the last good one stays in force' : 'none is in force yet';
  }

  private readonly unreadableLog = new Throttled(UNREADABLE_LOG_EVERY_MS);

  /**
   * A source failed to produce any text at all (file missing, key missing). Counted each time;
   * logged when the reason changes and once a minute while it stays (a file is read every
   * second: a line each time buried everything else).
   */
  unreadable(source: string, message: string): void {
    this.metrics.configReloadFailures.inc({ source });
    this.unreadableLog.run(
      () =>
        this.logger.error(`configuration unreadable; ${this.keeping()}`, {
          source,
          error: message,
        }),
      message,
    );
  }
}

export interface ConfigSource {
  start(): Promise<void>;
  /** Reads the configuration again now (a pod asked for a revision never seen here). */
  refresh(): Promise<void>;
  stop(): Promise<void>;
}

export class DefaultConfigSource implements ConfigSource {
  constructor(private readonly store: ConfigStore) {}
  start(): Promise<void> {
    this.store.offer(DEFAULT_CONFIG_YAML, 'default');
    return Promise.resolve();
  }
  refresh(): Promise<void> {
    return Promise.resolve();
  }
  stop(): Promise<void> {
    return Promise.resolve();
  }
}

/** A file, polled (see poll.ts). */
export class FileConfigSource implements ConfigSource {
  private readonly poller: FilePoller;

  constructor(store: ConfigStore, path: string, intervalMs = 1000) {
    const source = `file ${path}`;
    this.poller = new FilePoller(
      [path],
      ([text]) => store.offer(text ?? '', source),
      (err) => store.unreadable(source, err.message),
      intervalMs,
    );
  }

  start(): Promise<void> {
    return this.poller.start();
  }

  refresh(): Promise<void> {
    return this.poller.poll();
  }

  stop(): Promise<void> {
    this.poller.stop();
    return Promise.resolve();
  }
}

/**
 * Re-reads the configuration and the revision history when a pod asks for a revision not held
 * here (the controller saw the new configuration first), at most once a second: the one API
 * call allowed on the admission path, and it keeps a wave from rolling pods onto the wrong
 * revision.
 */
const REFRESH_TIMEOUT_MS = 1000;

export interface RefresherDeps {
  /** Whether the revision is held here (in force once, or in the history). */
  hasSeen: (revision: string) => boolean;
  /** Reads the configuration and the history again. */
  refresh: () => Promise<void>;
  metrics: WebhookMetrics;
  now?: () => number;
}

export class RevisionRefresher {
  private lastMs = -Infinity;
  private pending: Promise<void> | undefined;
  private readonly now: () => number;

  constructor(private readonly deps: RefresherDeps) {
    this.now = deps.now ?? Date.now;
  }

  async ensure(revision: string | undefined): Promise<void> {
    if (revision === undefined || this.deps.hasSeen(revision)) return;
    if (this.pending) return this.pending;
    if (this.now() - this.lastMs < 1000) {
      this.deps.metrics.configRefreshes.inc({ result: 'rate-limited' });
      return;
    }
    this.lastMs = this.now();
    // Bounded: admission must answer within the webhook timeout even if the API server hangs;
    // the pod then gets the configuration held now.
    const timeout = new Promise<void>((resolve) => setTimeout(resolve, REFRESH_TIMEOUT_MS).unref());
    this.pending = Promise.race([this.deps.refresh(), timeout]).finally(
      () => (this.pending = undefined),
    );
    await this.pending;
    this.deps.metrics.configRefreshes.inc({
      result: this.deps.hasSeen(revision) ? 'found' : 'not-found',
    });
  }
}
