// The connection to the cluster under test: the admin kubeconfig chosen by global setup, and the
// API clients the suites use, for the admin or for any other kubeconfig (a ServiceAccount's).

import * as path from 'node:path';
import {
  AdmissionregistrationV1Api,
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  VersionApi,
  setHeaderOptions,
  type RequestContext,
} from '@kubernetes/client-node';
import { kubeconfigPath } from './environment';

/** The request option that sends a patch as a JSON merge patch (the client's default is JSON patch). */
export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

type Dispatcher = NonNullable<ReturnType<RequestContext['getDispatcher']>>;

/**
 * A KubeConfig whose requests share one connection pool per context. The client makes a new
 * pool for every request, whose idle keep-alive connection then holds the test process open for
 * seconds after the last test; with one pool per context, close() ends them at once (and requests
 * reuse connections instead of making a TLS handshake each).
 */
export class PooledKubeConfig extends KubeConfig {
  private readonly pools = new Map<string, Dispatcher>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    const key = this.getCurrentContext();
    const pool = this.pools.get(key);
    if (!pool) {
      this.pools.set(key, fresh);
    } else if (pool !== fresh) {
      context.setDispatcher(pool);
      void fresh.close(); // never used: closes at once
    }
  }

  /** Closes the connections; later requests open new ones. */
  async close(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.close()));
  }
}

/** KubernetesObjectApi that also says whether a kind is namespaced (from API discovery). */
export class ObjectApi extends KubernetesObjectApi {
  static forConfig(kubeConfig: KubeConfig): ObjectApi {
    const client = kubeConfig.makeApiClient(ObjectApi);
    client.setDefaultNamespace(kubeConfig);
    return client;
  }

  /** Throws if the API server does not serve `kind` in `apiVersion`. */
  async isNamespaced(apiVersion: string, kind: string): Promise<boolean> {
    const resource = await this.resource(apiVersion, kind);
    if (!resource) {
      throw new Error(`the API server does not serve kind ${kind} in ${apiVersion}`);
    }
    return resource.namespaced;
  }
}

/** A kubeconfig and the API clients made from it. */
export interface Cluster {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  apps: AppsV1Api;
  rbac: RbacAuthorizationV1Api;
  admission: AdmissionregistrationV1Api;
  version: VersionApi;
  /** Any kind, by apiVersion and kind (apply.ts uses it). */
  objects: ObjectApi;
  /** Closes the clients' connections (call it in afterAll); later calls reconnect. */
  close(): Promise<void>;
}

/** Loads a kubeconfig; `paths` may be a KUBECONFIG-style list (merged like kubectl does). */
export function loadKubeConfig(paths: string = kubeconfigPath()): PooledKubeConfig {
  const files = paths.split(path.delimiter).filter(Boolean);
  const [first, ...rest] = files;
  if (!first) throw new Error('no kubeconfig path given');
  const kubeConfig = new PooledKubeConfig();
  kubeConfig.loadFromFile(first);
  for (const file of rest) {
    const more = new KubeConfig();
    more.loadFromFile(file);
    kubeConfig.mergeConfig(more, Boolean(kubeConfig.currentContext));
  }
  return kubeConfig;
}

/** The API clients for a kubeconfig: by default the admin one of the cluster under test. */
export function connect(kubeConfig: KubeConfig = loadKubeConfig()): Cluster {
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    rbac: kubeConfig.makeApiClient(RbacAuthorizationV1Api),
    admission: kubeConfig.makeApiClient(AdmissionregistrationV1Api),
    version: kubeConfig.makeApiClient(VersionApi),
    objects: ObjectApi.forConfig(kubeConfig),
    close: async () => {
      if (kubeConfig instanceof PooledKubeConfig) await kubeConfig.close();
    },
  };
}
