// The watch of injected pods worth a look: its label selector names the configuration's
// revision (and widens while the gate judges a wave), so the watch is replaced when it changes.

import type { V1Pod } from '@kubernetes/client-node';
import type { ResilientWatch } from '@outrigger/kube';
import type { ConfigInForce } from '../config/config-map';
import { injectedPodSelector } from './pods';
import { podWatch, type WatchDeps } from './watches';

/** The watch of injected pods: its selector follows the configuration and the gate. */
export interface InjectedPodWatch {
  /** Replaces the watch with one of `selector`. */
  switchTo(selector: string): void;
  /** No selector yet, or the watch of the current one has listed once. */
  readonly hasSynced: boolean;
  /** For readiness: the first watch has listed (a later switch relists; ready meanwhile). */
  readonly hasListedOnce: boolean;
  stop(): Promise<void>;
}

/** No pods watched: a controller made without a pod watch (tests). */
export const NO_POD_WATCH: InjectedPodWatch = {
  switchTo: () => undefined,
  hasSynced: true,
  hasListedOnce: true,
  stop: () => Promise.resolve(),
};

/**
 * The injected-pod watch, replaced whenever the configuration's revision changes its selector.
 * Until the first configuration is in force there is nothing to compare pods against.
 */
export class InjectedPods implements InjectedPodWatch {
  private current: ResilientWatch<V1Pod> | undefined;
  private stopped = false;

  constructor(private readonly deps: WatchDeps) {}

  /** No selector yet, or the watch of the current one has listed once. */
  get hasSynced(): boolean {
    return this.current?.hasSynced ?? true;
  }

  /**
   * For readiness: the first watch has listed. A later switch of selector (the gate widening it)
   * relists, but the controller is no less ready meanwhile: the gate waits for it on its own.
   */
  get hasListedOnce(): boolean {
    if (this.current?.hasSynced) this.listedOnce = true;
    return this.current === undefined || this.listedOnce;
  }

  private listedOnce = false;

  switchTo(selector: string): void {
    if (this.stopped) return;
    const old = this.current;
    this.current = podWatch(this.deps, 'injected', selector);
    void old?.stop();
    this.current.start().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.current?.stop();
  }
}

/**
 * Which injected pods the watch lists: those on a revision other than the one in force, or
 * every injected pod while the gate judges owners of a wave (it reads the pods at the wave's
 * revision) and when opting out sheds sidecars.
 */
export class PodSelection {
  private inForce: ConfigInForce | undefined;
  private gateJudging = false;
  private selector: string | undefined;

  constructor(private readonly watch: InjectedPodWatch) {}

  configInForce(inForce: ConfigInForce): void {
    this.inForce = inForce;
    this.choose();
  }

  /** The watch widens while the gate judges owners of a wave, and narrows after. */
  judging(judging: boolean): void {
    if (judging === this.gateJudging) return;
    this.gateJudging = judging;
    this.choose();
  }

  /** Every injected pod is selected and the watch has listed them: the gate may read them. */
  get wideAndSynced(): boolean {
    const wide = this.inForce && injectedPodSelector(this.inForce.revision, true, true);
    return this.selector !== undefined && this.selector === wide && this.watch.hasSynced;
  }

  private choose(): void {
    if (!this.inForce) return;
    const { revision, config } = this.inForce;
    // A set's own restartOnOptOut must find its pods at any proxy revision too.
    const shed =
      config.rollout.restartOnOptOut || config.sets.some((s) => s.rollout?.restartOnOptOut);
    const selector = injectedPodSelector(revision, shed, this.gateJudging);
    if (selector === this.selector) return;
    this.selector = selector;
    this.watch.switchTo(selector);
  }
}
