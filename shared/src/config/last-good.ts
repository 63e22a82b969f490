// The last good configuration: what the webhook and the controller keep in force while its
// source changes. Each valid version is offered; one equal to the version in force (compared
// whole, as canonical JSON: the revision leaves out settings that still matter, such as
// excludeNamespaces) changes nothing, so the object in force stays the same one. An invalid
// version is never offered, and so never displaces it.

import type { Config } from './config';
import { canonicalJson } from './canonical-json';
import { configRevision } from './revision';

export interface ConfigInForce {
  config: Config;
  revision: string;
}

export class LastGoodConfig {
  private held: { inForce: ConfigInForce; canonical: string } | undefined;

  get inForce(): ConfigInForce | undefined {
    return this.held?.inForce;
  }

  /**
   * Takes a valid configuration if it differs from the one in force; true when it did. Its
   * revision, when the caller has it already, saves hashing it again.
   */
  offer(config: Config, revision?: string): boolean {
    const canonical = canonicalJson(config);
    if (this.held?.canonical === canonical) return false;
    this.held = { inForce: { config, revision: revision ?? configRevision(config) }, canonical };
    return true;
  }
}
