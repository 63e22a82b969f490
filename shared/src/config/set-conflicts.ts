// Conflicts between sidecar sets, caught before they reach a pod: two sets that can land on the
// same pod may not add the same container or init container, nor listen on the same port, and
// a volume both add under one name must be the same volume. Whether two sets can meet is decided
// exactly from their selectors (selectorsOverlap), so sets kept apart by their labels or their
// owner kinds may reuse names.

import { isRecord, type Container, type Volume } from '../kubernetes/k8s';
import type { LabelSelector } from '../kubernetes/selector';
import { IDENTITY_VOLUME } from '../names';
import { canonicalJson } from './canonical-json';
import type { Reader } from './schema';
import { DEFAULT_SET, type SetOwnerKind, type SidecarSetConfig } from './sidecar-set';

/** What a set adds, as the conflict check sees it, with the YAML path of each part. */
interface SetFootprint {
  name: string;
  /** Where the set is written: `.sets[2]`, or `.proxy` for the default set. */
  path: (string | number)[];
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
  ownerKinds?: readonly SetOwnerKind[];
  containers: { name: string; path: (string | number)[] }[];
  /**
   * The ports its containers take in the pod: `port` names one in messages (`port 8080`, `host
   * port 53/UDP`), `key` is what may not be taken twice (a container port by number and
   * protocol; a host port by address, number and protocol, as the API server counts them).
   * `init`: an init container's, which has exited before the sidecars of its own set start.
   */
  ports: {
    port: string;
    key: string;
    init?: boolean;
    container: string;
    path: (string | number)[];
  }[];
  volumes: { name: string; json: string; path: (string | number)[] }[];
  /** The volumes its containers mount (or use as devices) that it does not add itself. */
  mounts: { name: string; path: (string | number)[] }[];
}

/** The proxy's footprint: every pod of an opted-in namespace, any owner. */
export interface ProxyFootprint {
  proxyName: string;
  initName: string;
  ports: { inbound: number; outbound: number; admin: number };
}

function proxyFootprint(proxy: ProxyFootprint): SetFootprint {
  const { inbound, outbound, admin } = proxy.ports;
  return {
    name: DEFAULT_SET,
    path: ['proxy'],
    containers: [
      { name: proxy.proxyName, path: ['proxy', 'name'] },
      { name: proxy.initName, path: ['init', 'name'] },
    ],
    ports: [
      {
        port: `port ${inbound}`,
        key: `${inbound}/TCP`,
        container: proxy.proxyName,
        path: ['proxy', 'ports', 'inbound'],
      },
      {
        port: `port ${outbound}`,
        key: `${outbound}/TCP`,
        container: proxy.proxyName,
        path: ['proxy', 'ports', 'outbound'],
      },
      {
        port: `port ${admin}`,
        key: `${admin}/TCP`,
        container: proxy.proxyName,
        path: ['proxy', 'ports', 'admin'],
      },
    ],
    volumes: [
      {
        name: IDENTITY_VOLUME,
        json: canonicalJson({ name: IDENTITY_VOLUME, emptyDir: { medium: 'Memory' } }),
        path: ['proxy'],
      },
    ],
    mounts: [],
  };
}

function setFootprint(set: SidecarSetConfig, index: number): SetFootprint {
  const base = ['sets', index];
  const containers: SetFootprint['containers'] = [];
  const ports: SetFootprint['ports'] = [];
  const each = (list: readonly Container[], field: string) =>
    list.forEach((c, i) => {
      containers.push({ name: c.name, path: [...base, field, i, 'name'] });
      (c.ports ?? []).forEach((port, j) => {
        const at = [...base, field, i, 'ports', j];
        const protocol = typeof port.protocol === 'string' ? port.protocol : 'TCP';
        const shown = protocol === 'TCP' ? '' : `/${protocol}`;
        const init = field === 'initContainers';
        ports.push({
          port: `port ${port.containerPort}${shown}`,
          key: `${port.containerPort}/${protocol}`,
          init,
          container: c.name,
          path: [...at, 'containerPort'],
        });
        if (typeof port.hostPort === 'number')
          ports.push({
            port: `host port ${port.hostPort}${shown}`,
            key: `host ${typeof port.hostIP === 'string' ? port.hostIP : ''}:${port.hostPort}/${protocol}`,
            init,
            container: c.name,
            path: [...at, 'hostPort'],
          });
      });
    });
  each(set.initContainers, 'initContainers');
  each(set.containers, 'containers');
  return {
    name: set.name,
    path: base,
    namespaceSelector: set.namespaceSelector,
    podSelector: set.podSelector,
    ownerKinds: set.ownerKinds,
    containers,
    ports,
    volumes: set.volumes.map((v: Volume, i) => ({
      name: v.name,
      json: canonicalJson(v),
      path: [...base, 'volumes', i, 'name'],
    })),
    mounts: foreignMounts(set, base),
  };
}

/** The volumes a set's containers mount or use as devices that the set does not add. */
function foreignMounts(set: SidecarSetConfig, base: (string | number)[]): SetFootprint['mounts'] {
  const own = new Set(set.volumes.map((v) => v.name));
  const out: SetFootprint['mounts'] = [];
  for (const field of ['initContainers', 'containers'] as const)
    set[field].forEach((c, i) => {
      for (const key of ['volumeMounts', 'volumeDevices'])
        (Array.isArray(c[key]) ? (c[key] as unknown[]) : []).forEach((m, j) => {
          const name = isRecord(m) ? m.name : undefined;
          if (typeof name === 'string' && !own.has(name))
            out.push({ name, path: [...base, field, i, key, j, 'name'] });
        });
    });
  return out;
}

/** Records every conflict among the proxy and the sets; none when the sets are apart. */
export function checkSetConflicts(
  reader: Reader,
  proxy: ProxyFootprint,
  sets: readonly SidecarSetConfig[],
): void {
  const seen = new Map<string, number>();
  sets.forEach((set, i) => {
    const first = seen.get(set.name);
    if (first !== undefined)
      reader.fail(['sets', i, 'name'], `set ${set.name} is already defined at .sets[${first}]`);
    else seen.set(set.name, i);
  });
  const footprints = [proxyFootprint(proxy), ...sets.map(setFootprint)];
  for (const f of footprints) withinSet(reader, f);
  for (let i = 0; i < footprints.length; i++)
    for (let j = i + 1; j < footprints.length; j++) {
      const a = footprints[i] as SetFootprint;
      const b = footprints[j] as SetFootprint;
      if (setsMeet(a, b)) between(reader, a, b);
    }
}

/** A set may not add the same container name, port or volume name twice. */
function withinSet(reader: Reader, f: SetFootprint): void {
  if (f.name === DEFAULT_SET) return; // the proxy's own fields are checked by config.ts
  const names = new Set<string>();
  for (const c of f.containers) {
    if (names.has(c.name))
      reader.fail(c.path, `set ${f.name} adds two containers named ${c.name}; rename one`);
    names.add(c.name);
  }
  const ports = new Set<string>();
  for (const p of f.ports) {
    if (p.init) continue;
    if (ports.has(p.key))
      reader.fail(p.path, `set ${f.name} listens on ${p.port} twice; give each its own`);
    ports.add(p.key);
  }
  const volumes = new Set<string>();
  for (const v of f.volumes) {
    if (volumes.has(v.name))
      reader.fail(v.path, `set ${f.name} adds two volumes named ${v.name}; rename one`);
    volumes.add(v.name);
  }
}

const where = (path: (string | number)[]): string =>
  path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${k}`)).join('');

function between(reader: Reader, a: SetFootprint, b: SetFootprint): void {
  const overlap = `sets ${a.name} and ${b.name} can select the same pod`;
  const fix = 'rename one, or give the sets selectors that cannot both match';
  const containers = new Map(a.containers.map((x) => [x.name, x]));
  const ports = new Map(a.ports.map((x) => [x.key, x]));
  const volumes = new Map(a.volumes.map((x) => [x.name, x]));
  for (const c of b.containers) {
    const other = containers.get(c.name);
    if (other)
      reader.fail(
        c.path,
        `${overlap}, and both add a container named ${c.name} (${where(other.path)}): ${fix}`,
      );
  }
  for (const p of b.ports) {
    const other = ports.get(p.key);
    if (other)
      reader.fail(
        p.path,
        `${overlap}, and both use ${p.port} (${a.name}'s container ${other.container}, ${where(other.path)}): give ${b.name}'s container ${p.container} another port, or ${fix.replace('rename one, or ', '')}`,
      );
  }
  for (const [user, adder] of [
    [a, b],
    [b, a],
  ] as const)
    for (const m of user.mounts) {
      const added = adder.volumes.find((v) => v.name === m.name);
      if (added)
        reader.fail(
          m.path,
          `set ${user.name} mounts volume ${m.name}, which set ${adder.name} adds (${where(added.path)}), and the two can select the same pod: a pod without ${adder.name} would have no such volume; add the same volume to ${user.name} to share it`,
        );
    }
  for (const v of b.volumes) {
    const other = volumes.get(v.name);
    if (other && other.json !== v.json)
      reader.fail(
        v.path,
        `${overlap}, and both add a volume named ${v.name} that is not the same volume (${where(other.path)}): make the two definitions equal to share it, or rename one`,
      );
  }
}

/** Whether some pod can be selected by both sets. */
export function setsMeet(a: SetFootprint, b: SetFootprint): boolean {
  const kinds = b.ownerKinds ? new Set<string>(b.ownerKinds) : undefined;
  if (a.ownerKinds && kinds && !a.ownerKinds.some((k) => kinds.has(k))) return false;
  return (
    selectorsOverlap(a.namespaceSelector, b.namespaceSelector) &&
    selectorsOverlap(a.podSelector, b.podSelector)
  );
}

/** What the terms of both selectors ask of one key. */
interface KeyTerms {
  present: boolean;
  absent: boolean;
  /** The values allowed, when some term lists them; undefined: any value. */
  allowed?: Set<string>;
  excluded: Set<string>;
}

function terms(selectors: readonly (LabelSelector | undefined)[]): Map<string, KeyTerms> {
  const keys = new Map<string, KeyTerms>();
  for (const s of selectors) if (s) addTerms(keys, s);
  return keys;
}

function addTerms(keys: Map<string, KeyTerms>, selector: LabelSelector): void {
  const of = (key: string): KeyTerms => {
    let t = keys.get(key);
    if (!t) keys.set(key, (t = { present: false, absent: false, excluded: new Set() }));
    return t;
  };
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) allow(of(key), [value]);
  for (const req of selector.matchExpressions ?? []) {
    const t = of(req.key);
    if (req.operator === 'In') allow(t, req.values ?? []);
    else if (req.operator === 'NotIn') for (const v of req.values ?? []) t.excluded.add(v);
    else if (req.operator === 'Exists') t.present = true;
    else t.absent = true;
  }
}

/** The key must be there, with one of `values` (and one of those allowed before). */
function allow(t: KeyTerms, values: readonly string[]): void {
  t.present = true;
  t.allowed = new Set(t.allowed ? values.filter((v) => t.allowed?.has(v)) : values);
}

/**
 * Whether some label set satisfies both selectors. Exact: the terms of a selector are a
 * conjunction over independent keys, so both can hold unless the terms of one key contradict.
 */
export function selectorsOverlap(
  a: LabelSelector | undefined,
  b: LabelSelector | undefined,
): boolean {
  for (const t of terms([a, b]).values()) {
    if (t.present && t.absent) return false;
    if (t.allowed && [...t.allowed].every((v) => t.excluded.has(v))) return false;
  }
  return true;
}
