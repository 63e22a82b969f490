// Leader election on a coordination.k8s.io/v1 Lease (docs/controller.md, "Leader election"): only
// the leader writes; the others keep warm caches and take over within the lease duration.
//
// A candidate takes the Lease when it is free (no holder) or expired (renewTime plus the Lease's
// own leaseDurationSeconds is in the past). Every write carries the resourceVersion it read, so
// of two candidates that saw the same Lease only one write succeeds; the other gets 409 Conflict.
// The leader renews every third of the lease duration and steps down when it has not renewed
// for the lease duration minus one retry period, before any other candidate may take the Lease.
// stop() releases the Lease (no holder, duration 1 s) so a follower takes over at its next retry.

import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { KubeApi } from './api-client';
import { apiErrorMessage, httpStatus } from './errors';
import { formatMicroTime, leaseIsFree, leasesPath, type Lease } from './lease';
import type { KubeLogger } from './log';

export interface LeaderElectorOptions {
  api: KubeApi;
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** This candidate's name in the Lease; default the hostname and a random suffix. */
  identity?: string;
  /** Default 15. */
  leaseDurationSeconds?: number;
  /** How often a follower (or a leader whose renewal failed) tries again; default 2000. */
  retryPeriodMs?: number;
  onStartedLeading: () => void;
  onStoppedLeading: () => void;
  logger: KubeLogger;
  /** Milliseconds since the epoch; default Date.now. */
  clock?: () => number;
}

/** What one attempt found: the Lease is ours, another live holder has it, or the call failed. */
type Attempt = 'held' | 'taken' | 'failed';

const DEFAULT_LEASE_SECONDS = 15;
const DEFAULT_RETRY_MS = 2000;
const RETRY_JITTER = 0.2;

export function defaultIdentity(): string {
  return `${hostname()}-${randomBytes(4).toString('hex')}`;
}

export class LeaderElector {
  readonly identity: string;
  private readonly clock: () => number;
  private readonly leaseSeconds: number;
  private readonly retryMs: number;
  private readonly renewMs: number;
  /** A leader that has not renewed for this long steps down. */
  private readonly deadlineMs: number;
  private leading = false;
  private lastRenewMs = 0;
  private started = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: LeaderElectorOptions) {
    this.identity = options.identity ?? defaultIdentity();
    this.clock = options.clock ?? Date.now;
    this.leaseSeconds = options.leaseDurationSeconds ?? DEFAULT_LEASE_SECONDS;
    this.retryMs = options.retryPeriodMs ?? DEFAULT_RETRY_MS;
    this.renewMs = (this.leaseSeconds * 1000) / 3;
    this.deadlineMs = Math.max(this.renewMs, this.leaseSeconds * 1000 - this.retryMs);
  }

  /** True while this candidate holds the Lease and its last renewal is recent enough. */
  get isLeader(): boolean {
    return this.leading && this.clock() - this.lastRenewMs < this.deadlineMs;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    this.schedule(0);
  }

  /** Stops trying; a leader releases the Lease and calls onStoppedLeading. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    if (!this.leading) return;
    await this.release();
    this.stepDown('stopped');
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick();
    }, delayMs);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    const attempt = await this.tryAcquireOrRenew();
    if (this.stopped && attempt !== 'held') return;
    if (attempt === 'held') {
      this.lastRenewMs = this.clock();
      if (!this.leading) this.startLeading();
      this.schedule(this.renewMs);
      return;
    }
    if (this.leading && (attempt === 'taken' || this.clock() - this.lastRenewMs >= this.deadlineMs))
      this.stepDown(attempt === 'taken' ? 'another candidate holds the lease' : 'renewal failed');
    this.schedule(this.retryMs * (1 + Math.random() * RETRY_JITTER));
  }

  private async tryAcquireOrRenew(): Promise<Attempt> {
    const { namespace, name } = this.options;
    try {
      const lease = await this.read();
      const nowMs = this.clock();
      if (!lease) {
        await this.options.api.create(leasesPath(namespace), this.claim(undefined, nowMs));
        return 'held';
      }
      const holder = lease.spec?.holderIdentity;
      if (holder !== this.identity && !leaseIsFree(lease, nowMs)) return 'taken';
      await this.options.api.replace(leasesPath(namespace, name), this.claim(lease, nowMs));
      return 'held';
    } catch (err) {
      // 409: another candidate wrote the Lease since we read it (or created it first).
      const status = httpStatus(err);
      this.options.logger.log(status === 409 ? 'debug' : 'warn', 'lease update failed', {
        lease: name,
        status,
        error: apiErrorMessage(err),
      });
      return 'failed';
    }
  }

  private async read(): Promise<Lease | undefined> {
    try {
      return await this.options.api.get<Lease>(
        leasesPath(this.options.namespace, this.options.name),
      );
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /** The Lease with this candidate as holder, keeping the resourceVersion that was read. */
  private claim(lease: Lease | undefined, nowMs: number): Lease {
    const spec = lease?.spec ?? {};
    const renewing = spec.holderIdentity === this.identity;
    const transitions = spec.leaseTransitions ?? 0;
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: lease?.metadata ?? { name: this.options.name, namespace: this.options.namespace },
      spec: {
        holderIdentity: this.identity,
        leaseDurationSeconds: this.leaseSeconds,
        acquireTime: renewing && spec.acquireTime ? spec.acquireTime : formatMicroTime(nowMs),
        renewTime: formatMicroTime(nowMs),
        leaseTransitions: renewing || !lease ? transitions : transitions + 1,
      },
    };
  }

  /** Gives the Lease up if it is still ours, so a follower need not wait for it to expire. */
  private async release(): Promise<void> {
    const { namespace, name } = this.options;
    try {
      const lease = await this.read();
      if (lease?.spec?.holderIdentity !== this.identity) return;
      const spec = { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 };
      spec.renewTime = formatMicroTime(this.clock());
      await this.options.api.replace(leasesPath(namespace, name), { ...lease, spec });
    } catch (err) {
      this.options.logger.log('warn', 'lease release failed', {
        lease: name,
        error: apiErrorMessage(err),
      });
    }
  }

  private startLeading(): void {
    this.leading = true;
    this.options.logger.log('info', 'started leading', {
      lease: this.options.name,
      identity: this.identity,
    });
    this.callback(this.options.onStartedLeading);
  }

  private stepDown(why: string): void {
    if (!this.leading) return;
    this.leading = false;
    this.options.logger.log('info', 'stopped leading', { lease: this.options.name, reason: why });
    this.callback(this.options.onStoppedLeading);
  }

  private callback(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.options.logger.log('error', 'leader callback failed', { error: apiErrorMessage(err) });
    }
  }
}
