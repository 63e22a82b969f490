// Where the API server is and how to prove who we are, read without the Kubernetes client library
// (which loads every API type and every cloud's login plugin: about 80 MiB resident). In a pod:
// the service account's token (re-read, as the kubelet rotates it) and CA, and the
// KUBERNETES_SERVICE_HOST/PORT environment. From kubeconfig files (found as kubectl finds them,
// for the CLI): the current context's cluster (server, CA, insecure-skip-tls-verify) and user
// (client certificate and key, a token or a token file). A user that logs in through an exec
// plugin is refused with an error saying so, but for the CLI, which runs the plugin as kubectl
// does (exec-credential.ts); one that logs in through an auth provider or a password, always.

import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { execCredential } from './exec-credential';

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

type Entry = Record<string, unknown>;

const record = (v: unknown): Entry =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Entry) : {};
const text = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);
/** Not by `instanceof Error`: node's own errors come from another realm under test runners. */
function firstLine(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message;
  return (typeof message === 'string' ? message : String(err)).split('\n')[0] ?? '';
}

/**
 * Why a kubeconfig gives no access: a file that cannot be read or parsed, no current-context,
 * a context (or its cluster or user) that is not there, a cluster without a server, a login
 * Outrigger does not run, an exec plugin that failed, or no kubeconfig at all outside a pod.
 */
export type KubeconfigProblem =
  | 'unreadable'
  | 'no-current-context'
  | 'no-such-context'
  | 'incomplete'
  | 'unsupported-login'
  | 'login-failed'
  | 'not-found';

export class KubeconfigError extends Error {
  constructor(
    readonly problem: KubeconfigProblem,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'KubeconfigError';
  }
}

/** One kubeconfig file, parsed, with the folder its relative paths are relative to. */
interface KubeconfigFile {
  doc: Entry;
  base: string;
}

function readKubeconfig(file: string): KubeconfigFile {
  try {
    return { doc: record(parse(readFileSync(file, 'utf8'))), base: dirname(file) };
  } catch (err) {
    throw new KubeconfigError('unreadable', `kubeconfig ${file}: ${firstLine(err)}`, {
      cause: err,
    });
  }
}

/**
 * The entry of that name, from the first file that has one (kubectl merges KUBECONFIG's files
 * so: the first to name a context, cluster or user wins), with its file's folder.
 */
function pick(
  files: readonly KubeconfigFile[],
  what: 'context' | 'cluster' | 'user',
  name: string | undefined,
  where: string,
): { entry: Entry; base: string } {
  for (const { doc, base } of files) {
    const list: unknown[] = Array.isArray(doc[`${what}s`]) ? (doc[`${what}s`] as unknown[]) : [];
    const found = list.map(record).find((e) => e.name === name);
    if (found) return { entry: record(found[what]), base };
  }
  throw new KubeconfigError(
    what === 'context' ? 'no-such-context' : 'incomplete',
    `kubeconfig ${where}: no ${what} named ${JSON.stringify(name)}`,
  );
}

/** Data inline (base64) or a file, relative to the kubeconfig's folder. */
function material(entry: Entry, key: string, base: string): Buffer | undefined {
  const data = text(entry[`${key}-data`]);
  if (data) return Buffer.from(data, 'base64');
  const file = text(entry[key]);
  if (!file) return undefined;
  return readFileSync(isAbsolute(file) ? file : join(base, file));
}

export interface KubeconfigOptions {
  /** The context to use instead of the current-context. */
  context?: string;
  /** Run a user's exec plugin for its credential, as kubectl does (the CLI); default: refuse. */
  runExecPlugins?: boolean;
}

/**
 * The access the kubeconfig's current context (or `options.context`) gives. Several files are
 * merged as kubectl merges the files KUBECONFIG lists: the first file to set current-context,
 * or to name a context, cluster or user, wins.
 */
export function kubeconfigAccess(
  files: string | readonly string[],
  options: KubeconfigOptions = {},
): ClusterAccess {
  const paths = typeof files === 'string' ? [files] : files;
  const where = paths.join(delimiter);
  const parsed = paths.map(readKubeconfig);
  const contextName =
    options.context ?? parsed.map((f) => text(f.doc['current-context'])).find(Boolean);
  if (!contextName)
    throw new KubeconfigError(
      'no-current-context',
      `kubeconfig ${where}: no current cluster: no current-context is set (kubectl config use-context NAME sets one)`,
    );
  const { entry: context } = pick(parsed, 'context', contextName, where);
  const cluster = pick(parsed, 'cluster', text(context.cluster), where);
  const user = pick(parsed, 'user', text(context.user), where);
  const runExec = options.runExecPlugins === true;
  return accessFrom({ cluster, user, context, where, runExec });
}

function accessFrom(o: {
  cluster: { entry: Entry; base: string };
  user: { entry: Entry; base: string };
  context: Entry;
  where: string;
  runExec: boolean;
}): ClusterAccess {
  const [cluster, user] = [o.cluster.entry, o.user.entry];
  if ((user.exec && !o.runExec) || user['auth-provider'] || user.username)
    throw new KubeconfigError(
      'unsupported-login',
      `kubeconfig ${o.where}: user ${JSON.stringify(o.context.user)} logs in with ${user.exec ? 'an exec plugin' : user.username ? 'a password' : 'an auth provider'}, which Outrigger does not run: give it a client certificate or a token (a ServiceAccount's)`,
    );
  const server = text(cluster.server);
  if (!server)
    throw new KubeconfigError(
      'incomplete',
      `kubeconfig ${o.where}: cluster ${JSON.stringify(o.context.cluster)} has no server`,
    );
  return {
    server: server.replace(/\/+$/, ''),
    ca: material(cluster, 'certificate-authority', o.cluster.base),
    ...(user.exec ? fromPlugin(o) : credentials(user, o.user.base)),
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}

/** The user's client certificate and key, and its token or token file. */
function credentials(user: Entry, base: string): Pick<ClusterAccess, 'cert' | 'key' | 'token'> {
  const token = text(user.token);
  const tokenPath = text(user.tokenFile);
  return {
    cert: material(user, 'client-certificate', base),
    key: material(user, 'client-key', base),
    token: token
      ? () => token
      : tokenPath
        ? tokenFile(isAbsolute(tokenPath) ? tokenPath : join(base, tokenPath))
        : undefined,
  };
}

function fromPlugin(o: { user: { entry: Entry; base: string }; context: Entry; where: string }) {
  try {
    return execCredential(record(o.user.entry.exec), o.user.base);
  } catch (err) {
    throw new KubeconfigError(
      'login-failed',
      `kubeconfig ${o.where}: user ${JSON.stringify(o.context.user)}: ${firstLine(err)}`,
      { cause: err },
    );
  }
}

/** From the kubeconfig file when one is given, else the pod's own. */
export function loadClusterAccess(kubeconfig: string | undefined): ClusterAccess {
  return kubeconfig ? kubeconfigAccess(kubeconfig) : inClusterAccess();
}

/** The files kubectl reads when given none: those KUBECONFIG lists, else ~/.kube/config if any. */
export function defaultKubeconfigFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const listed = (env.KUBECONFIG ?? '').split(delimiter).filter(Boolean);
  if (listed.length > 0) return listed;
  const file = join(env.HOME || homedir(), '.kube', 'config');
  return existsSync(file) ? [file] : [];
}

export interface KubectlAccessOptions extends KubeconfigOptions {
  /** The --kubeconfig file: this one only. */
  kubeconfig?: string;
  env?: NodeJS.ProcessEnv;
}

/**
 * The access found by kubectl's rules, for commands an admin runs: the --kubeconfig file, else
 * the files KUBECONFIG lists (merged), else ~/.kube/config, else, in a pod, the pod's own.
 * Exec plugins are run, as kubectl runs them.
 */
export function kubectlAccess(options: KubectlAccessOptions = {}): ClusterAccess {
  const env = options.env ?? process.env;
  const files = options.kubeconfig ? [options.kubeconfig] : defaultKubeconfigFiles(env);
  if (files.length > 0)
    return kubeconfigAccess(files, { ...options, runExecPlugins: options.runExecPlugins ?? true });
  const none = 'KUBECONFIG is not set and ~/.kube/config does not exist';
  if (options.context)
    throw new KubeconfigError(
      'no-such-context',
      `no kubeconfig to find context ${JSON.stringify(options.context)} in: ${none}`,
    );
  if (!env.KUBERNETES_SERVICE_HOST)
    throw new KubeconfigError(
      'not-found',
      `no kubeconfig: ${none}, and this is not a pod (KUBERNETES_SERVICE_HOST is not set)`,
    );
  return inClusterAccess(env);
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
