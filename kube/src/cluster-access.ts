// Where the API server is and how to prove who we are, read without the Kubernetes client library
// (which loads every API type and every cloud's login plugin: about 80 MiB resident). In a pod:
// the service account's token (re-read, as the kubelet rotates it) and CA, and the
// KUBERNETES_SERVICE_HOST/PORT environment. From a kubeconfig file: the current context's cluster
// (server, CA, insecure-skip-tls-verify) and user (client certificate and key, a token or a token
// file). A user that logs in through an exec plugin or an auth provider is refused with an error
// saying so.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';

export interface ClusterAccess {
  /** The API server's base URL, such as https://10.0.0.1:443. */
  server: string;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  /** The bearer token to send now, if any. */
  token?: () => string;
  insecureSkipTlsVerify?: boolean;
}

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';
/** How long a token read from a file is used before the file is read again. */
const TOKEN_REREAD_MS = 60_000;

/** A token file read again once a minute: projected tokens are rotated by the kubelet. */
function tokenFile(path: string): () => string {
  let token = '';
  let readAt = -Infinity;
  return () => {
    const now = Date.now();
    if (now - readAt > TOKEN_REREAD_MS) {
      token = readFileSync(path, 'utf8').trim();
      readAt = now;
    }
    return token;
  };
}

/** The access of the pod we run in. */
export function inClusterAccess(env: NodeJS.ProcessEnv = process.env): ClusterAccess {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new Error(
      'not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set): pass --kubeconfig',
    );
  const token = tokenFile(join(SERVICE_ACCOUNT, 'token'));
  token();
  return {
    server: `https://${host.includes(':') ? `[${host}]` : host}:${port}`,
    ca: readFileSync(join(SERVICE_ACCOUNT, 'ca.crt')),
    token,
  };
}

type Named<T> = { name?: string } & T;
type Entry = Record<string, unknown>;

const record = (v: unknown): Entry =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Entry) : {};
const text = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

function pick(list: unknown, name: string | undefined, what: string, file: string): Entry {
  const found = (Array.isArray(list) ? (list as Named<Entry>[]) : []).find((e) => e.name === name);
  if (!found) throw new Error(`kubeconfig ${file}: no ${what} named ${JSON.stringify(name)}`);
  return record(found[what]);
}

/** Data inline (base64) or a file, relative to the kubeconfig's folder. */
function material(entry: Entry, key: string, base: string): Buffer | undefined {
  const data = text(entry[`${key}-data`]);
  if (data) return Buffer.from(data, 'base64');
  const file = text(entry[key]);
  if (!file) return undefined;
  return readFileSync(isAbsolute(file) ? file : join(base, file));
}

/** The access the kubeconfig file's current context gives. */
export function kubeconfigAccess(file: string): ClusterAccess {
  const doc = record(parse(readFileSync(file, 'utf8')));
  const base = dirname(file);
  const contextName = text(doc['current-context']);
  const context = pick(doc.contexts, contextName, 'context', file);
  const cluster = pick(doc.clusters, text(context.cluster), 'cluster', file);
  const user = pick(doc.users, text(context.user), 'user', file);
  if (user.exec || user['auth-provider'] || user.username)
    throw new Error(
      `kubeconfig ${file}: user ${JSON.stringify(context.user)} logs in with ${user.exec ? 'an exec plugin' : user.username ? 'a password' : 'an auth provider'}, which Outrigger does not run: give it a client certificate or a token (a ServiceAccount's)`,
    );
  const server = text(cluster.server);
  if (!server)
    throw new Error(`kubeconfig ${file}: cluster ${JSON.stringify(context.cluster)} has no server`);
  const token = text(user.token);
  const tokenPath = text(user.tokenFile);
  return {
    server: server.replace(/\/+$/, ''),
    ca: material(cluster, 'certificate-authority', base),
    cert: material(user, 'client-certificate', base),
    key: material(user, 'client-key', base),
    token: token
      ? () => token
      : tokenPath
        ? tokenFile(isAbsolute(tokenPath) ? tokenPath : join(base, tokenPath))
        : undefined,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}

/** From the kubeconfig file when one is given, else the pod's own. */
export function loadClusterAccess(kubeconfig: string | undefined): ClusterAccess {
  return kubeconfig ? kubeconfigAccess(kubeconfig) : inClusterAccess();
}

/** What accessOf reads of a client library's KubeConfig (only its current cluster and user). */
export interface KubeConfigLike {
  getCurrentCluster(): {
    server: string;
    caData?: string;
    caFile?: string;
    skipTLSVerify?: boolean;
  } | null;
  getCurrentUser(): {
    certData?: string;
    certFile?: string;
    keyData?: string;
    keyFile?: string;
    token?: string;
  } | null;
}

const dataOrFile = (data?: string, file?: string): Buffer | undefined =>
  data ? Buffer.from(data, 'base64') : file ? readFileSync(file) : undefined;

/** The access of a KubeConfig the client library loaded (the CLI's and the tests'). */
export function accessOf(kc: KubeConfigLike): ClusterAccess {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  const user = kc.getCurrentUser() ?? {};
  const token = user.token;
  return {
    server: cluster.server.replace(/\/+$/, ''),
    ca: dataOrFile(cluster.caData, cluster.caFile),
    cert: dataOrFile(user.certData, user.certFile),
    key: dataOrFile(user.keyData, user.keyFile),
    token: token ? () => token : undefined,
    insecureSkipTlsVerify: cluster.skipTLSVerify === true,
  };
}
