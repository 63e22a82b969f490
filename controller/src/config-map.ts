// The configuration as the controller holds it: the last good version read from the ConfigMap
// (an invalid edit is refused with every error, and the last good one stays in force), and the
// ConfigMap itself, whose annotations carry the wave's stop and the admin's resume.

import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  CONFIG_MAP_KEY,
  configRevision,
  formatIssue,
  parseConfig,
  type Config,
} from '@outrigger/shared';
import type { ObjectRef } from '@outrigger/kube';

export interface ConfigInForce {
  config: Config;
  revision: string;
  /** The ConfigMap's resourceVersion it was read from. */
  resourceVersion: string | undefined;
}

/** Why the ConfigMap's current version is not in force; undefined when it is. */
export type ConfigProblem =
  | { reason: 'missing'; message: string }
  | { reason: 'no-key'; message: string }
  | { reason: 'invalid'; message: string; errors: string[] };

export type ConfigReading = { ok: true; config: Config; revision: string } | ConfigProblem;

/** Reads the configuration from the ConfigMap (pure). */
export function readConfigMap(cm: V1ConfigMap | undefined, ref: ObjectRef): ConfigReading {
  const where = `ConfigMap ${ref.namespace}/${ref.name}`;
  if (!cm) return { reason: 'missing', message: `${where} does not exist; create it` };
  const text = cm.data?.[CONFIG_MAP_KEY];
  if (text === undefined)
    return {
      reason: 'no-key',
      message: `${where} has no key ${CONFIG_MAP_KEY}; put the injector configuration there`,
    };
  const result = parseConfig(text);
  if (!result.ok) {
    const errors = result.errors.map(formatIssue);
    return {
      reason: 'invalid',
      message: `${where} key ${CONFIG_MAP_KEY} is invalid; the last good configuration stays in force: ${errors.join('; ')}`,
      errors,
    };
  }
  return { ok: true, config: result.config, revision: configRevision(result.config) };
}

/** Holds the ConfigMap and the configuration last read from it successfully. */
export class ConfigHolder {
  private object: V1ConfigMap | undefined;
  private good: ConfigInForce | undefined;
  private problem: ConfigProblem | undefined;

  constructor(readonly ref: ObjectRef) {}

  get configMap(): V1ConfigMap | undefined {
    return this.object;
  }

  get inForce(): ConfigInForce | undefined {
    return this.good;
  }

  /** Why the ConfigMap as it stands is not in force, if it is not. */
  get currentProblem(): ConfigProblem | undefined {
    return this.problem;
  }

  /**
   * Offers the ConfigMap's current version (as ConfigStore.offer does in the webhook): a valid one
   * is taken, an invalid one leaves the last good one in force. Returns what changed: whether the
   * configuration in force did, and the problem with this version, if any.
   */
  offer(cm: V1ConfigMap | undefined): {
    configChanged: boolean;
    problem: ConfigProblem | undefined;
  } {
    this.object = cm;
    const reading = readConfigMap(cm, this.ref);
    if (!('ok' in reading)) {
      this.problem = reading;
      return { configChanged: false, problem: reading };
    }
    this.problem = undefined;
    const resourceVersion = cm?.metadata?.resourceVersion;
    const before = this.good;
    const changed =
      before === undefined ||
      before.revision !== reading.revision ||
      JSON.stringify(before.config) !== JSON.stringify(reading.config);
    this.good = { config: reading.config, revision: reading.revision, resourceVersion };
    return { configChanged: changed, problem: undefined };
  }
}
