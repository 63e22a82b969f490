// The admission-policy mode (--admission-mode policy or both): keeps one MutatingAdmissionPolicy
// and its bindings for every set at its current revision and at every revision an owner's
// template is pinned to and the history holds (shared/src/policy/), and deletes the ones no owner
// needs any more. The API server then injects new pods by itself, with no Outrigger pod up.
// Each reconcile lists what is there by its label and writes only what differs: a resync every
// minute puts back a policy deleted by hand.

import type { V1ConfigMap } from '@kubernetes/client-node';
import { isNotFound, type KubeApi } from '@outrigger/kube';
import {
  canonicalJson,
  compilePolicies,
  FIELD_MANAGER,
  heldBySet,
  pinnedSnapshot,
  POLICY_MANAGED_BY,
  POLICY_MANAGER,
  readHistory,
  readSetHistory,
  setHistoryKey,
  type ConfigSnapshot,
  type PolicyApiVersion,
  type PolicyMode,
  type PolicyObject,
} from '@outrigger/shared';
import type { Logger } from '../log';
import type { Result } from '../watch/queue';

export const POLICIES_KEY = 'Policies';
/** How often what is there is compared with what should be, with nothing else to prompt it. */
const RESYNC_MS = 60_000;

export interface PolicyFlags {
  mode: PolicyMode;
  apiVersion: PolicyApiVersion;
  failurePolicy: 'Fail' | 'Ignore';
  /**
   * The cluster-scoped object the policies are owned by: the install's ClusterRole, so that
   * uninstalling Outrigger has the garbage collector delete them (a policy left behind would go
   * on injecting every new pod).
   */
  ownerClusterRole: string;
}

interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
}

export interface PolicyInputs {
  config: ConfigSnapshot | undefined;
  history: V1ConfigMap | undefined;
  /** The proxy's revisions owners' templates are pinned to. */
  inUse: ReadonlySet<string>;
  /** The sets' revisions owners' templates are pinned to, as setHistoryKey keys. */
  setsInUse: ReadonlySet<string>;
}

export interface PolicyKeeperOptions {
  api: KubeApi;
  flags: PolicyFlags;
  systemNamespace: string;
  logger: Logger;
  acquireWrite: () => Promise<void>;
  onWrite: (resource: string, verb: string) => void;
  inputs: () => PolicyInputs;
}

const KINDS = [
  { kind: 'MutatingAdmissionPolicy', resource: 'mutatingadmissionpolicies' },
  { kind: 'MutatingAdmissionPolicyBinding', resource: 'mutatingadmissionpolicybindings' },
] as const;

interface Existing {
  metadata?: { name?: string; labels?: Record<string, string>; ownerReferences?: unknown[] };
  spec?: unknown;
}

export class PolicyKeeper {
  /** What the last compile was made of: owners' changes that leave it alone cost nothing. */
  private lastKey = '';

  private owner: OwnerReference | undefined;
  private warnedOwner = false;

  constructor(private readonly options: PolicyKeeperOptions) {}

  /** The owner reference every policy carries, read once; none (and a warning) if it cannot be. */
  private async ownerReference(): Promise<OwnerReference | undefined> {
    if (this.owner) return this.owner;
    const name = this.options.flags.ownerClusterRole;
    try {
      const role = await this.options.api.get<{ metadata?: { uid?: string } }>(
        `/apis/rbac.authorization.k8s.io/v1/clusterroles/${encodeURIComponent(name)}`,
      );
      const uid = role.metadata?.uid;
      if (uid)
        this.owner = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name, uid };
    } catch (err) {
      if (!this.warnedOwner)
        this.options.logger.warn(
          'the admission policies are kept without an owner: uninstalling will leave them behind',
          {
            clusterRole: name,
            error: String(err),
            fix: `grant the controller get on ClusterRole ${name} (the chart does), or delete them by hand: kubectl delete mutatingadmissionpolicies,mutatingadmissionpolicybindings -l ${POLICY_MANAGED_BY}=${POLICY_MANAGER}`,
          },
        );
      this.warnedOwner = true;
    }
    return this.owner;
  }

  /** Whether the policies' inputs changed since the last reconcile: then one is due. */
  changed(): boolean {
    return this.key(this.options.inputs()) !== this.lastKey;
  }

  private key(inputs: PolicyInputs): string {
    return JSON.stringify([
      // Any change of the configuration in force: the sets, their selectors, the exclusions.
      inputs.config === undefined ? -1 : configId(inputs.config),
      inputs.history?.metadata?.resourceVersion,
      [...inputs.inUse].sort(),
      [...inputs.setsInUse].sort(),
    ]);
  }

  /** The policies and bindings the configuration in force and the pins ask for. */
  desired(inputs: PolicyInputs): PolicyObject[] | undefined {
    const current = inputs.config;
    if (!current) return undefined;
    const history = readHistory(inputs.history?.data);
    const pinned = new Map<string, ConfigSnapshot>();
    for (const e of history.entries)
      if (inputs.inUse.has(e.revision) && e.revision !== current.revision)
        pinned.set(e.revision, pinnedSnapshot(current, e.content, e.revision));
    const pinnedSets = heldBySet(readSetHistory(inputs.history?.data).entries, (e) =>
      inputs.setsInUse.has(setHistoryKey(e.set, e.revision)),
    );
    const { mode, apiVersion, failurePolicy } = this.options.flags;
    return compilePolicies({
      current,
      pinned,
      pinnedSets,
      // The API is served from Kubernetes 1.34 on, where native sidecars always run.
      nativeSidecarSupported: true,
      systemNamespace: this.options.systemNamespace,
      mode,
      apiVersion,
      failurePolicy,
    });
  }

  async reconcile(): Promise<Result> {
    const inputs = this.options.inputs();
    const desired = this.desired(inputs);
    if (!desired) return { done: true };
    const key = this.key(inputs);
    const existing = await this.existing();
    const owner = await this.ownerReference();
    if (owner) for (const o of desired) o.metadata.ownerReferences = [owner];
    const written = await this.write(desired, existing);
    const deleted = await this.deleteUnwanted(desired, existing);
    this.lastKey = key;
    if (written + deleted > 0)
      this.options.logger.info('admission policies brought up to date', {
        revision: inputs.config?.revision,
        policies: desired
          .filter((o) => o.kind === 'MutatingAdmissionPolicy')
          .map((o) => o.metadata.name),
        written,
        deleted,
      });
    return { requeueAfterMs: RESYNC_MS };
  }

  /** What is there now, by `<kind>/<name>`. */
  private async existing(): Promise<Map<string, Existing>> {
    const existing = new Map<string, Existing>();
    for (const k of KINDS)
      for (const item of await this.list(k.resource))
        existing.set(`${k.kind}/${item.metadata?.name ?? ''}`, item);
    return existing;
  }

  /** Applies what differs from what is there; returns how many writes it made. */
  private async write(desired: PolicyObject[], existing: Map<string, Existing>): Promise<number> {
    let written = 0;
    for (const object of desired) {
      const there = existing.get(`${object.kind}/${object.metadata.name}`);
      if (there && same(there, object)) continue;
      await this.options.acquireWrite();
      await this.apply(object);
      written++;
    }
    return written;
  }

  /** Deletes what no longer should be: bindings before their policies, which would fail admissions alone. */
  private async deleteUnwanted(
    desired: PolicyObject[],
    existing: Map<string, Existing>,
  ): Promise<number> {
    const wanted = new Set(desired.map((o) => `${o.kind}/${o.metadata.name}`));
    let deleted = 0;
    for (const k of [...KINDS].reverse())
      for (const [id, item] of existing) {
        if (!id.startsWith(`${k.kind}/`) || wanted.has(id)) continue;
        await this.options.acquireWrite();
        await this.remove(k.resource, item.metadata?.name ?? '');
        deleted++;
      }
    return deleted;
  }

  private path(resource: string, name?: string): string {
    const base = `/apis/${this.options.flags.apiVersion}/${resource}`;
    return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
  }

  private async list(resource: string): Promise<Existing[]> {
    const list = await this.options.api.get<{ items?: Existing[] }>(this.path(resource), {
      labelSelector: `${POLICY_MANAGED_BY}=${POLICY_MANAGER}`,
    });
    return list.items ?? [];
  }

  private async apply(object: PolicyObject): Promise<void> {
    const resource = KINDS.find((k) => k.kind === object.kind)?.resource ?? '';
    await this.options.api.patch(this.path(resource, object.metadata.name), object, 'apply', {
      fieldManager: FIELD_MANAGER,
      force: true,
    });
    this.options.onWrite(resource, 'apply');
  }

  private async remove(resource: string, name: string): Promise<void> {
    try {
      await this.options.api.delete(this.path(resource, name));
      this.options.onWrite(resource, 'delete');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
}

const configIds = new WeakMap<object, number>();
let nextConfigId = 0;
/** A number for each configuration object seen: a new one is a new configuration in force. */
function configId(config: object): number {
  let id = configIds.get(config);
  if (id === undefined) configIds.set(config, (id = nextConfigId++));
  return id;
}

/** Whether what is there is what we would write (the API server adds defaults we do not set). */
function same(there: Existing, object: PolicyObject): boolean {
  const labels = there.metadata?.labels ?? {};
  if (Object.entries(object.metadata.labels).some(([k, v]) => labels[k] !== v)) return false;
  if (!contains(there.metadata?.ownerReferences ?? [], object.metadata.ownerReferences ?? []))
    return false;
  return contains(there.spec, object.spec);
}

/** Whether `actual` holds every field of `wanted` with the same value. */
function contains(actual: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted))
    return (
      Array.isArray(actual) &&
      actual.length === wanted.length &&
      wanted.every((w, i) => contains(actual[i], w))
    );
  if (typeof wanted === 'object' && wanted !== null) {
    if (typeof actual !== 'object' || actual === null) return false;
    const a = actual as Record<string, unknown>;
    return Object.entries(wanted as Record<string, unknown>).every(([k, w]) => contains(a[k], w));
  }
  return canonicalJson(actual) === canonicalJson(wanted);
}
