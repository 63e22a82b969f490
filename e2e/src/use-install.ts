// The install an in-cluster suite runs against, set up and taken down the same way by every
// suite: the release's namespace made afresh (restricted Pod Security), an application
// namespace opted in on the real node, the chart installed with the suite's values, the
// controller seen mirroring the opt-in and the API server seen reaching the webhook through its
// Service; after the suite, the release uninstalled and both namespaces removed.

import { INJECT, INJECTION_LABEL, SYSTEM_NAMESPACE } from '@outrigger/shared';
import type { Cluster } from './cluster';
import {
  createReleaseNamespace,
  helmRelease,
  realNodeNamespaceAnnotations,
  removeRelease,
  type ImageReference,
} from './in-cluster';
import { createNamespace } from './namespace';
import { PROXY_CONTAINER, webhookInjects } from './sidecar';
import { done, pending, waitFor } from './wait';

const MINUTES = 60_000;

export interface SuiteInstall {
  /** The application namespace's name prefix. */
  prefix: string;
  image: ImageReference;
  /** The chart values to install with; undefined leaves the install to the suite's first test. */
  values?: string[];
  /** Told the application namespace's name, before the install. */
  created: (app: string) => void;
}

/** Registers the suite's beforeAll and afterAll; call it inside the describe. */
export function useInstall(cluster: Cluster, options: SuiteInstall): void {
  let app = '';
  beforeAll(async () => {
    await createReleaseNamespace(cluster);
    app = await createNamespace(cluster, {
      prefix: options.prefix,
      annotations: { ...realNodeNamespaceAnnotations(), [INJECT]: 'enabled' },
    });
    options.created(app);
    if (options.values === undefined) return;
    await helmRelease('install', SYSTEM_NAMESPACE, options.image, options.values);
    await optedIn(cluster, app);
    // Ready pods are not yet a route: kube-proxy adds a new pod to the Service a moment later,
    // and until then the API server's calls are refused and its pods admitted uninjected.
    await webhookInjects(cluster, app, PROXY_CONTAINER);
  }, 6 * MINUTES);

  afterAll(async () => {
    await removeRelease(cluster, app);
    await cluster.close();
  }, 3 * MINUTES);
}

/** The controller in its pod mirrored the opt-in: the webhook stamps what is created now. */
export async function optedIn(cluster: Cluster, app: string): Promise<void> {
  await waitFor(`namespace ${app} labelled ${INJECTION_LABEL}`, async () => {
    const ns = await cluster.core.readNamespace({ name: app });
    return ns.metadata?.labels?.[INJECTION_LABEL] === 'enabled'
      ? done(ns)
      : pending(ns.metadata?.labels);
  });
}
