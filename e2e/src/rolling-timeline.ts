// How many of a set of namespaces' Deployments were rolling at once, recorded from a watch: each
// event updates one Deployment's state, in the order the API server sent them.

import { Watch, type V1Deployment } from '@kubernetes/client-node';
import type { Cluster } from './cluster';
import { deploymentRolloutStatus } from './rollout';

export class RollingTimeline {
  private readonly rolling = new Set<string>();
  private abort: AbortController | undefined;
  private stopped = false;
  /** Set when the watch ended before stop(): the timeline is incomplete. */
  ended: string | undefined;
  maxRolling = 0;
  readonly starts: string[] = [];
  /** Every change of a Deployment between rolling and not, in order: shown when a check fails. */
  readonly transitions: string[] = [];
  private atMax: string[] = [];

  /** The transitions up to the moment the most were rolling. */
  get timelineToMax(): string {
    return this.atMax.join('\n');
  }

  constructor(
    private readonly cluster: Cluster,
    private readonly namespaces: ReadonlySet<string>,
  ) {}

  async start(): Promise<void> {
    const watch = new Watch(this.cluster.kubeConfig);
    this.abort = await watch.watch(
      '/apis/apps/v1/deployments',
      {},
      (_type: string, d: V1Deployment) => this.observe(d),
      (err: unknown) => {
        // A watch that ends before stop() would leave the check blind from then on.
        if (!this.stopped) this.ended = `the timeline's watch ended early: ${String(err)}`;
      },
    );
  }

  private observe(d: V1Deployment): void {
    const ns = d.metadata?.namespace ?? '';
    if (!this.namespaces.has(ns)) return;
    const key = `${ns}/${d.metadata?.name}`;
    const status = deploymentRolloutStatus(d);
    const rolling = status.outcome !== 'done';
    if (rolling && !this.rolling.has(key)) this.starts.push(key);
    if (rolling !== this.rolling.has(key))
      this.transitions.push(
        `${rolling ? 'start' : 'end  '} ${key} rv=${d.metadata?.resourceVersion} ${status.message}`,
      );
    if (rolling) this.rolling.add(key);
    else this.rolling.delete(key);
    if (this.rolling.size > this.maxRolling) this.atMax = [...this.transitions];
    this.maxRolling = Math.max(this.maxRolling, this.rolling.size);
  }

  stop(): void {
    this.stopped = true;
    this.abort?.abort();
  }
}
