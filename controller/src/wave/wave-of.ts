// Which wave a part of a step plans: the proxy's, or a sidecar set's, each with its names,
// revision and rollout settings (wave-contract.ts, WaveOf).

import { PROXY_KEYS, setRolloutConfig, type AppliedSet } from '@outrigger/shared';
import type { ConfigInForce } from '../config/config-map';
import type { WaveOf } from './wave-contract';

/** The proxy's wave of a configuration. */
export function proxyWave(config: ConfigInForce): WaveOf {
  const { revision } = config;
  return { keys: PROXY_KEYS, revision, config: config.config, title: `revision ${revision}` };
}

/** A sidecar set's wave: its names, its revision, the configuration with its rollout. */
export function setWave(config: ConfigInForce, set: AppliedSet): WaveOf {
  const { revision, keys } = set;
  const title = `set ${keys.set} revision ${revision}`;
  return { keys, revision, config: setRolloutConfig(config.config, set), set, title };
}
