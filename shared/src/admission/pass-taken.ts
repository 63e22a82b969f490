// The names and ports one pass of the webhook has given out: the proxy's, then each set's as it
// is added, so that a set two of this pass's sets would clash over is left out of the pod.

import type { AppliedSet } from './applied-sets';

/**
 * The names and ports taken in this pass: the proxy's, then each set's as it is added. The
 * configuration's check keeps sets that can meet apart; this keeps a pod valid whatever it was
 * checked against (a pinned proxy, a namespace not known).
 */
export class PassTaken {
  private readonly names = new Map<string, string>();
  private readonly ports = new Map<string, string>();
  /** Volumes by name: who added each, and its definition (canonical JSON). */
  private readonly volumes = new Map<string, { by: string; json: string | undefined }>();
  constructor(proxy: { names: readonly string[]; ports: readonly string[] } | undefined) {
    for (const n of proxy?.names ?? []) this.names.set(n, 'the proxy');
    for (const p of proxy?.ports ?? []) this.ports.set(p, 'the proxy');
  }
  /** What of `a` another set of this pass (a pinned revision's, say) has taken already. */
  taken(a: AppliedSet): string | undefined {
    const name = a.containerNames.find((n) => this.names.has(n));
    if (name !== undefined) return `container ${name} of ${this.names.get(name)}`;
    for (const p of a.portSpecs)
      for (const { key, shown } of p.host ? [p, p.host] : [p]) {
        const by = this.ports.get(key);
        if (by !== undefined) return `${shown} of ${by}`;
      }
    const volume = a.volumeNames.find((n) => {
      const had = this.volumes.get(n);
      return had !== undefined && had.json !== a.volumeJson.get(n);
    });
    if (volume !== undefined)
      return `volume ${volume} of ${this.volumes.get(volume)?.by}, defined otherwise`;
    return undefined;
  }
  add(a: AppliedSet): void {
    const by = `set ${a.set.name}`;
    for (const n of a.containerNames) this.names.set(n, by);
    for (const p of a.portSpecs) {
      this.ports.set(p.key, by);
      if (p.host) this.ports.set(p.host.key, by);
    }
    for (const n of a.volumeNames)
      if (!this.volumes.has(n)) this.volumes.set(n, { by, json: a.volumeJson.get(n) });
  }
}
