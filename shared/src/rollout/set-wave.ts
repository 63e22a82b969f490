// What a sidecar set's wave reads of the set (docs/controller.md, "Sidecar sets"): the containers
// its health gate watches, and the configuration with the set's own rollout settings.

import type { Config } from '../config/config';
import { effectiveRollout } from '../config/rollout-config';
import type { AppliedSet } from '../admission/applied-sets';

/** The containers of a set whose trouble fails its health gate: its first sidecar, and its first init container. */
export function setGateNames(a: AppliedSet): { proxy: string; init?: string } {
  const [sidecar] = a.set.containers;
  const [init] = a.set.initContainers;
  if (sidecar) return init ? { proxy: sidecar.name, init: init.name } : { proxy: sidecar.name };
  return { proxy: init?.name ?? '' };
}

const rolloutConfigs = new WeakMap<AppliedSet, { base: Config; config: Config }>();

/** The configuration a set's wave reads: the one in force with the set's own rollout. */
export function setRolloutConfig(base: Config, a: AppliedSet): Config {
  const known = rolloutConfigs.get(a);
  if (known?.base === base) return known.config;
  const config = { ...base, rollout: effectiveRollout(base.rollout, a.set.rollout) };
  rolloutConfigs.set(a, { base, config });
  return config;
}
