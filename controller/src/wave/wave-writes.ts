// The writes of one wave step: every patch and delete it makes goes through here, under the write
// permission of the term of leadership that runs the step. A write that meets a stale
// resourceVersion (or a precondition that no longer holds) is a conflict, not a failure: it is
// counted, gives undefined, and the step plans again once the watch has caught up.

import type { V1ConfigMap } from '@kubernetes/client-node';
import type { KubeApi, ObjectRef } from '@outrigger/kube';
import { isConflict, workloadClient, WORKLOAD_RESOURCES } from '@outrigger/kube';
import { FIELD_MANAGER, type Workload } from '@outrigger/shared';
import type { Logger } from '../log';
import { slimWorkload } from '../watch/slim';

/** What the writes need, given once when the wave is built. */
export interface WriteDeps {
  api: KubeApi;
  onWrite: (resource: string, verb: string) => void;
  /** A workload as our write left it (slim), until the cache has caught up with the write. */
  onWritten: (before: Workload, after: Workload) => void;
  logger: Logger;
}

/** A merge patch that applies only to the resourceVersion it was decided on. */
export function withResourceVersion(
  body: Record<string, unknown>,
  rv: string,
): Record<string, unknown> {
  const metadata = (body.metadata ?? {}) as Record<string, unknown>;
  return { ...body, metadata: { ...metadata, resourceVersion: rv } };
}

export class WaveWrites {
  /** Writes that met a stale cache in this step. */
  conflicts = 0;

  constructor(
    private readonly deps: WriteDeps,
    /** Waits for a write token; throws when this replica may no longer write. */
    private readonly acquireWrite: () => Promise<void>,
  ) {}

  /** Runs one write; a conflict is counted and gives undefined. */
  private async write<T>(what: string, call: () => Promise<T>): Promise<T | undefined> {
    try {
      return await call();
    } catch (err) {
      if (!isConflict(err)) throw err;
      this.conflicts += 1;
      this.deps.logger.debug('write refused on a stale resourceVersion; deciding again', {
        object: what,
      });
      return undefined;
    }
  }

  /** Patches an owner; gives it as the write left it (slim), or undefined on a conflict. */
  async patchWorkload(workload: Workload, body: object): Promise<Workload | undefined> {
    const { deps } = this;
    await this.acquireWrite();
    deps.onWrite(WORKLOAD_RESOURCES[workload.kind], 'patch');
    const args = {
      name: workload.metadata?.name ?? '',
      namespace: workload.metadata?.namespace ?? '',
      body,
      fieldManager: FIELD_MANAGER,
    };
    const what = `${workload.kind} ${args.namespace}/${args.name}`;
    const written = await this.write(what, () =>
      workloadClient(deps.api, workload.kind).mergePatch(args),
    );
    if (!written) return undefined;
    const after = slimWorkload(workload.kind)(written);
    deps.onWritten(workload, after);
    return after;
  }

  /** Merge-patches a ConfigMap at the resourceVersion it was read at; gives it as written, undefined on a conflict. */
  async patchConfigMap(
    ref: ObjectRef,
    body: Record<string, unknown>,
    resourceVersion: string | undefined,
  ): Promise<V1ConfigMap | undefined> {
    await this.acquireWrite();
    this.deps.onWrite('configmaps', 'patch');
    const { namespace, name } = ref;
    return this.write(`ConfigMap ${namespace}/${name}`, () =>
      this.deps.api.patch<V1ConfigMap>(
        `/api/v1/namespaces/${namespace}/configmaps/${name}`,
        resourceVersion ? withResourceVersion(body, resourceVersion) : body,
        'merge',
        { fieldManager: FIELD_MANAGER },
      ),
    );
  }

  /**
   * Deletes a pod with preconditions on its uid and resourceVersion; false on a conflict (the
   * pod changed since the plan saw it). A pod already gone (404) is thrown for the caller.
   */
  async deletePod(
    namespace: string,
    pod: { name: string; uid?: string; resourceVersion?: string },
  ): Promise<boolean> {
    await this.acquireWrite();
    this.deps.onWrite('pods', 'delete');
    const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(pod.name)}`;
    const { uid, resourceVersion } = pod;
    const options = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) },
    };
    const deleted = await this.write(`Pod ${namespace}/${pod.name}`, () =>
      this.deps.api.delete(path, undefined, options),
    );
    return deleted !== undefined;
  }
}
