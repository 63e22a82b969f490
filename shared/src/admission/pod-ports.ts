// The ports of a pod's network, as a set's must not meet them. The containers of a pod share one
// network: a set's sidecar that declares a port one of the app's containers declares while both
// run would not get it, or would take it from the app. A host port is the node's, whatever the
// host IP it is bound to (0.0.0.0 holds every one): the API server refuses a pod two of whose
// containers take the same one, and in a host-network pod every container port is a host port
// (the API server defaults hostPort to containerPort there, and refuses any other).
//
// What runs together: the app's containers and native sidecars run as long as the pod, its other
// init containers one at a time before them. A set's sidecars run as long as the pod too, and a
// native one placed before the app starts before the app's init containers, beside them; its own
// init containers run to completion first, and are not compared.

import type { SidecarSetConfig } from '../config/sidecar-set';
import { isRecord, type PodLike } from '../kubernetes/k8s';

/** A container port as two containers of one pod may not both take it: number and protocol. */
export const portKey = (port: number, protocol: unknown): string =>
  `${port}/${typeof protocol === 'string' ? protocol : 'TCP'}`;

/** A host port as two containers of one node may not both take it, at any host IP. */
export const hostPortKey = (port: number, protocol: unknown): string =>
  `host ${portKey(port, protocol)}`;

/** One declared port of a set: its keys, and how a warning names it. */
export interface SetPort {
  readonly key: string;
  readonly shown: string;
  readonly containerPort: number;
  readonly protocol: string;
  /** A sidecar's (it runs as long as the pod), not an init container's. */
  readonly sidecar: boolean;
  /** Its explicit hostPort, with the key and name of that. */
  readonly host?: { readonly port: number; readonly key: string; readonly shown: string };
}

const shownPort = (port: number, protocol: unknown): string =>
  portKey(port, protocol).replace(/\/TCP$/, '');

/** The ports a set's containers declare, init containers included. */
export function setPorts(set: SidecarSetConfig): SetPort[] {
  const of = (containers: SidecarSetConfig['containers'], sidecar: boolean): SetPort[] =>
    containers.flatMap((c) =>
      (c.ports ?? []).map((p) => {
        const { containerPort, hostPort } = p;
        const protocol = typeof p.protocol === 'string' ? p.protocol : 'TCP';
        const port: SetPort = {
          key: portKey(containerPort, protocol),
          shown: `port ${shownPort(containerPort, protocol)}`,
          containerPort,
          protocol,
          sidecar,
        };
        if (typeof hostPort !== 'number' || hostPort === 0) return port;
        return { ...port, host: hostOf(hostPort, protocol) };
      }),
    );
  return [...of(set.initContainers, false), ...of(set.containers, true)];
}

function hostOf(port: number, protocol: string): NonNullable<SetPort['host']> {
  return {
    port,
    key: hostPortKey(port, protocol),
    shown: `host port ${shownPort(port, protocol)}`,
  };
}

/** Ports of containers that run at the same time: their container ports and host ports. */
interface Ports {
  readonly ports: Set<string>;
  readonly hostPorts: Set<string>;
}

/** The ports a pod's own containers declare, read the first time a set with ports asks. */
export class PodPorts {
  private read: { long: Ports; early: Ports } | undefined;
  constructor(private readonly pod: PodLike) {}

  get hostNetwork(): boolean {
    return this.pod.spec?.hostNetwork === true;
  }

  /**
   * What of the set's sidecars' `ports` the pod takes already, as a warning names it; undefined
   * for nothing. `beside` says the sidecars start before the app's init containers and run
   * beside them (native, placed before the app).
   */
  taken(ports: readonly SetPort[], beside: boolean): string[] | undefined {
    if (!ports.some((p) => p.sidecar)) return undefined;
    const { long, early } = (this.read ??= this.readPorts());
    let taken: string[] | undefined;
    for (const p of ports) {
      if (!p.sidecar) continue;
      const what = this.takes(p, long) ?? (beside ? this.takes(p, early) : undefined);
      if (what !== undefined) (taken ??= []).push(what);
    }
    return taken;
  }

  /** How a warning names `p` if one of `own` takes it already. */
  private takes(p: SetPort, own: Ports): string | undefined {
    // In a host-network pod every port is a host port, the set's under its containerPort.
    if (own.ports.has(p.key)) return this.hostNetwork ? `host ${p.shown}` : p.shown;
    const host = p.host ?? (this.hostNetwork ? hostOf(p.containerPort, p.protocol) : undefined);
    return host && own.hostPorts.has(host.key) ? host.shown : undefined;
  }

  private readPorts(): { long: Ports; early: Ports } {
    const long: Ports = { ports: new Set(), hostPorts: new Set() };
    const early: Ports = { ports: new Set(), hostPorts: new Set() };
    const spec = this.pod.spec;
    const inits: unknown[] = Array.isArray(spec?.initContainers) ? spec.initContainers : [];
    const containers: unknown[] = Array.isArray(spec?.containers) ? spec.containers : [];
    for (const c of inits)
      this.addPorts(c, isRecord(c) && c.restartPolicy === 'Always' ? long : early);
    for (const c of containers) this.addPorts(c, long);
    return { long, early };
  }

  private addPorts(c: unknown, into: Ports): void {
    const declared: unknown = isRecord(c) ? c.ports : undefined;
    if (!Array.isArray(declared)) return;
    for (const p of declared as unknown[]) {
      if (!isRecord(p) || typeof p.containerPort !== 'number') continue;
      into.ports.add(portKey(p.containerPort, p.protocol));
      const host = typeof p.hostPort === 'number' && p.hostPort !== 0 ? p.hostPort : undefined;
      const effective = host ?? (this.hostNetwork ? p.containerPort : undefined);
      if (effective !== undefined) into.hostPorts.add(hostPortKey(effective, p.protocol));
    }
  }
}

/**
 * A set's port whose hostPort is not its containerPort, which a host-network pod may not have
 * (the API server refuses it): how a reason names it, or undefined.
 */
export function hostNetworkMismatch(ports: readonly SetPort[]): string | undefined {
  const p = ports.find((x) => x.host !== undefined && x.host.port !== x.containerPort);
  return p?.host
    ? `${p.shown} has hostPort ${p.host.port}, and in a host-network pod a port's hostPort must be its containerPort`
    : undefined;
}
