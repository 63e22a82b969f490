// The configuration revision: a short, stable hash of the part of the configuration that
// shapes injected pods. Rollout settings and namespace exclusions are left out, so tuning
// the rollout never restarts the fleet.

import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json';
import type { Config } from './config';
import type { SidecarSetConfig } from './sidecar-set';

export const REVISION_LENGTH = 10;

/** The part of a configuration that shapes injected pods: what a revision names. */
export type RevisionContent = Pick<Config, 'proxy' | 'init' | 'nativeSidecar' | 'overrides'>;

export function revisionContent(config: Config): RevisionContent {
  return {
    proxy: config.proxy,
    init: config.init,
    nativeSidecar: config.nativeSidecar,
    overrides: config.overrides,
  };
}

/** The short hash a revision is: of the value's canonical JSON. */
const revisionHash = (value: unknown): string =>
  createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, REVISION_LENGTH);

export function contentRevision(content: RevisionContent): string {
  return revisionHash(content);
}

export function configRevision(config: Config): string {
  return contentRevision(revisionContent(config));
}

/**
 * A sidecar set's revision: what the set adds and where, not which pods it selects (a selector
 * changes which owners carry the set, not what their pods look like).
 */
export function setRevision(set: SidecarSetConfig): string {
  const { name, order, containers, initContainers, volumes, nativeSidecar, position } = set;
  return revisionHash({
    name,
    order,
    containers,
    initContainers,
    volumes,
    nativeSidecar,
    position,
  });
}
