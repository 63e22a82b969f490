// The configuration as the controller holds it: the last good version read from the ConfigMap
// (an invalid edit is refused with every error, and the last good one stays in force), and the
// ConfigMap itself, whose annotations carry the wave's stop and the admin's resume.

import type { V1ConfigMap } from '@kubernetes/client-node';
import {
  LastGoodConfig,
  isOwnWaveRecord,
  readConfigMap,
  type ConfigInForce,
  type ConfigProblem,
} from '@outrigger/shared';
import type { ObjectRef } from '@outrigger/kube';

export type { ConfigInForce } from '@outrigger/shared';

/**
 * What a wave step reads from the ConfigMap, as one string: the object's identity, its data and
 * its annotations but the stage records and the last good revisions (the proxy's and each set's). Those two the controller
 * writes itself, after a step decided with them (shared/src/rollout/wave-stage.ts): reading them back
 * changes no plan, so they call for no step of their own (docs/controller.md, "Keys and the work
 * queue").
 */
function waveInputs(cm: V1ConfigMap | undefined): string {
  if (!cm) return '';
  const annotations = Object.fromEntries(
    Object.entries(cm.metadata?.annotations ?? {}).filter(([k]) => !isOwnWaveRecord(k)),
  );
  return JSON.stringify([cm.metadata?.uid, cm.data, cm.binaryData, annotations]);
}

/** Holds the ConfigMap and the configuration last read from it successfully. */
export class ConfigHolder {
  private object: V1ConfigMap | undefined;
  private readonly good = new LastGoodConfig();
  private problem: ConfigProblem | undefined;
  private inputs: string | undefined;

  constructor(readonly ref: ObjectRef) {}

  get configMap(): V1ConfigMap | undefined {
    return this.object;
  }

  get inForce(): ConfigInForce | undefined {
    return this.good.inForce;
  }

  /** Why the ConfigMap as it stands is not in force, if it is not. */
  get currentProblem(): ConfigProblem | undefined {
    return this.problem;
  }

  /**
   * Offers the ConfigMap's current version (as ConfigStore.offer does in the webhook): a valid one
   * is taken, an invalid one leaves the last good one in force. Returns what changed: whether the
   * configuration in force did, whether anything a wave step reads did, and the problem with this
   * version, if any.
   */
  offer(cm: V1ConfigMap | undefined): {
    configChanged: boolean;
    waveInputsChanged: boolean;
    problem: ConfigProblem | undefined;
  } {
    this.object = cm;
    const inputs = waveInputs(cm);
    const waveInputsChanged = inputs !== this.inputs;
    this.inputs = inputs;
    const reading = readConfigMap(cm, this.ref);
    if (!('ok' in reading)) {
      this.problem = reading;
      return { configChanged: false, waveInputsChanged, problem: reading };
    }
    this.problem = undefined;
    // Unchanged, the same object stays in force: the owners' assessments were made against it,
    // and a new one would have every owner assessed again (owner-index.ts).
    const changed = this.good.offer(reading.config, reading.revision);
    return { configChanged: changed, waveInputsChanged, problem: undefined };
  }
}
