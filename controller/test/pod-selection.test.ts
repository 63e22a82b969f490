import { REVISION, makeSnapshot, mustParseConfig } from '@outrigger/shared';
import type { ConfigInForce } from '../src/config/config-map';
import { PodSelection, type InjectedPodWatch } from '../src/watch/injected-pods';

/** A pod watch that records the selectors it was switched to. */
function recordingWatch(): InjectedPodWatch & { switches: string[]; synced: boolean } {
  const watch = {
    switches: [] as string[],
    synced: false,
    switchTo(selector: string) {
      watch.switches.push(selector);
      watch.synced = false;
    },
    get hasSynced() {
      return watch.synced;
    },
    hasListedOnce: true,
    stop: () => Promise.resolve(),
  };
  return watch;
}

function inForce(yaml: string): ConfigInForce {
  const config = mustParseConfig(yaml);
  return { config, revision: makeSnapshot(config).revision };
}

describe('PodSelection', () => {
  it('selects nothing before a configuration, then the pods off its revision', () => {
    const watch = recordingWatch();
    const selection = new PodSelection(watch);
    selection.judging(true);
    expect(watch.switches).toEqual([]);
    selection.judging(false);
    const first = inForce('proxy: {logLevel: info}\n');
    selection.configInForce(first);
    expect(watch.switches).toEqual([`${REVISION},${REVISION}!=${first.revision}`]);
  });

  it('widens to every injected pod while the gate judges, and the gate may read them once listed', () => {
    const watch = recordingWatch();
    const selection = new PodSelection(watch);
    selection.configInForce(inForce('proxy: {logLevel: info}\n'));
    expect(selection.wideAndSynced).toBe(false);
    selection.judging(true);
    expect(watch.switches.at(-1)).toBe(REVISION);
    expect(selection.wideAndSynced).toBe(false);
    watch.synced = true;
    expect(selection.wideAndSynced).toBe(true);
    selection.judging(true);
    expect(watch.switches).toHaveLength(2);
    selection.judging(false);
    expect(watch.switches).toHaveLength(3);
    watch.synced = true;
    expect(selection.wideAndSynced).toBe(false);
  });

  it('keeps the watch when a new revision selects the same pods (restartOnOptOut: every injected pod)', () => {
    const watch = recordingWatch();
    const selection = new PodSelection(watch);
    selection.configInForce(inForce('rollout: {restartOnOptOut: true}\n'));
    selection.configInForce(
      inForce('rollout: {restartOnOptOut: true}\nproxy: {logLevel: debug}\n'),
    );
    expect(watch.switches).toEqual([REVISION]);
  });
});
