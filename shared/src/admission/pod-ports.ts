// The ports of a pod's network, as a set's must not meet them. The containers of a pod share one
// network: a set that declares a port one of the app's containers declares would not get it, or
// would take it from the app. A host port is the node's: the API server refuses a pod two of
// whose containers take the same one, and in a host-network pod every container port is a host
// port (the API server defaults hostPort to containerPort there, and refuses any other).

import type { SidecarSetConfig } from '../config/sidecar-set';
import { isRecord, type PodLike } from '../kubernetes/k8s';

/** A container port as two containers of one pod may not both take it: number and protocol. */
export const portKey = (port: number, protocol: unknown): string =>
  `${port}/${typeof protocol === 'string' ? protocol : 'TCP'}`;

/** A host port as the API server tells two apart: protocol, host IP and number. */
const hostKey = (port: number, protocol: unknown, hostIP: unknown): string =>
  `host ${typeof hostIP === 'string' ? hostIP : ''}:${portKey(port, protocol)}`;

/** One declared port of a set: its keys, and how a warning names it. */
export interface SetPort {
  readonly key: string;
  readonly shown: string;
  readonly containerPort: number;
  readonly protocol: unknown;
  /** Its explicit hostPort, with the key and name of that. */
  readonly host?: {
    readonly port: number;
    readonly hostIP: string;
    readonly key: string;
    readonly shown: string;
  };
}

const shownPort = (port: number, protocol: unknown): string =>
  portKey(port, protocol).replace(/\/TCP$/, '');

/** The ports a set's containers declare, init containers included. */
export function setPorts(set: SidecarSetConfig): SetPort[] {
  return [...set.initContainers, ...set.containers].flatMap((c) =>
    (c.ports ?? []).map((p) => {
      const { containerPort, protocol, hostPort, hostIP } = p;
      const port: SetPort = {
        key: portKey(containerPort, protocol),
        shown: `port ${shownPort(containerPort, protocol)}`,
        containerPort,
        protocol,
      };
      if (typeof hostPort !== 'number' || hostPort === 0) return port;
      return {
        ...port,
        host: {
          port: hostPort,
          hostIP: typeof hostIP === 'string' ? hostIP : '',
          key: hostKey(hostPort, protocol, hostIP),
          shown: `host port ${shownPort(hostPort, protocol)}`,
        },
      };
    }),
  );
}

/** The ports a pod's own containers declare, read the first time a set with ports asks. */
export class PodPorts {
  private read: { ports: Set<string>; hostPorts: Set<string> } | undefined;
  constructor(private readonly pod: PodLike) {}

  get hostNetwork(): boolean {
    return this.pod.spec?.hostNetwork === true;
  }

  /** What of `ports` the pod takes already, as a warning names it; undefined for nothing. */
  taken(ports: readonly SetPort[]): string[] | undefined {
    if (ports.length === 0) return undefined;
    const own = (this.read ??= this.readPorts());
    if (own.ports.size === 0) return undefined;
    let taken: string[] | undefined;
    for (const p of ports) {
      const what = this.takes(p, own);
      if (what !== undefined) (taken ??= []).push(what);
    }
    return taken;
  }

  /** How a warning names `p` if the pod takes it already. */
  private takes(
    p: SetPort,
    own: { ports: Set<string>; hostPorts: Set<string> },
  ): string | undefined {
    // In a host-network pod every port is a host port, the set's under its containerPort.
    if (own.ports.has(p.key)) return this.hostNetwork ? `host ${p.shown}` : p.shown;
    const host = p.host ?? (this.hostNetwork ? hostOf(p) : undefined);
    return host && own.hostPorts.has(host.key) ? host.shown : undefined;
  }

  private readPorts(): { ports: Set<string>; hostPorts: Set<string> } {
    const ports = new Set<string>();
    const hostPorts = new Set<string>();
    const spec = this.pod.spec;
    const containers: unknown[] = [
      ...(Array.isArray(spec?.initContainers) ? spec.initContainers : []),
      ...(Array.isArray(spec?.containers) ? spec.containers : []),
    ];
    for (const c of containers) {
      const declared: unknown = isRecord(c) ? c.ports : undefined;
      if (!Array.isArray(declared)) continue;
      for (const p of declared as unknown[]) this.addPort(p, ports, hostPorts);
    }
    return { ports, hostPorts };
  }

  private addPort(p: unknown, ports: Set<string>, hostPorts: Set<string>): void {
    if (!isRecord(p) || typeof p.containerPort !== 'number') return;
    ports.add(portKey(p.containerPort, p.protocol));
    const host = typeof p.hostPort === 'number' && p.hostPort !== 0 ? p.hostPort : undefined;
    const effective = host ?? (this.hostNetwork ? p.containerPort : undefined);
    if (effective !== undefined) hostPorts.add(hostKey(effective, p.protocol, p.hostIP));
  }
}

/** A set's port in a host-network pod, where its hostPort is its containerPort. */
function hostOf(p: SetPort): SetPort['host'] {
  return {
    port: p.containerPort,
    hostIP: '',
    key: hostKey(p.containerPort, p.protocol, undefined),
    shown: `host ${p.shown}`,
  };
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
