// Credentials from a kubeconfig user's exec plugin (aws eks get-token, gke-gcloud-auth-plugin,
// kubelogin...), got as kubectl gets them: the plugin is run with the user's args and env and
// KUBERNETES_EXEC_INFO, and prints an ExecCredential whose status holds a token (or a client
// certificate and key). The token is used until its expirationTimestamp, then the plugin is
// run again. Only the commands an admin runs (the CLI) run plugins; the components refuse them
// (cluster-access.ts). The plugin's stderr and stdin are the terminal's, so a plugin that asks
// (a browser login, an MFA code) can.

import { execFileSync } from 'node:child_process';
import { isAbsolute, join } from 'node:path';
import { parseMicroTime } from './lease';

export interface ExecCredential {
  /** The bearer token to send now, when the plugin gives one. */
  token?: () => string;
  cert?: Buffer;
  key?: Buffer;
}

type Entry = Record<string, unknown>;

interface ExecStatus {
  token?: string;
  expiresMs?: number;
  cert?: string;
  key?: string;
}

const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];

const text = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);

/** The plugin's env entries ({name, value} pairs) over ours. */
function pluginEnv(exec: Entry, apiVersion: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const e of Array.isArray(exec.env) ? (exec.env as Entry[]) : [])
    if (typeof e.name === 'string' && typeof e.value === 'string') env[e.name] = e.value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify({
    apiVersion,
    kind: 'ExecCredential',
    spec: { interactive: process.stdin.isTTY === true },
  });
  return env;
}

function readStatus(stdout: string, what: string): ExecStatus {
  let status: Entry;
  try {
    status = ((JSON.parse(stdout) as Entry | null)?.status ?? {}) as Entry;
  } catch {
    throw new Error(`${what} printed no ExecCredential (not JSON)`);
  }
  const expiry = text(status.expirationTimestamp);
  const expiresMs = expiry === undefined ? undefined : parseMicroTime(expiry);
  if (expiry !== undefined && expiresMs === undefined)
    throw new Error(
      `${what}: expirationTimestamp ${JSON.stringify(expiry)} is not an RFC 3339 time`,
    );
  return {
    token: text(status.token),
    expiresMs,
    cert: text(status.clientCertificateData),
    key: text(status.clientKeyData),
  };
}

/**
 * Runs the plugin of a kubeconfig user's `exec` entry now, and again whenever the token it gave
 * has expired. `base` is the kubeconfig's folder: a relative command path is relative to it.
 * Throws, saying what to do, when the plugin cannot be run or prints no credential.
 */
export function execCredential(exec: Entry, base: string): ExecCredential {
  const command = text(exec.command);
  if (!command) throw new Error('its exec entry has no command');
  const file = command.includes('/') && !isAbsolute(command) ? join(base, command) : command;
  const args = strings(exec.args);
  const apiVersion = text(exec.apiVersion) ?? 'client.authentication.k8s.io/v1';
  const what = `exec plugin ${command}`;
  const hint = text(exec.installHint);
  const run = (): ExecStatus => {
    let stdout: string;
    try {
      stdout = execFileSync(file, args, {
        env: pluginEnv(exec, apiVersion),
        encoding: 'utf8',
        stdio: ['inherit', 'pipe', 'inherit'],
      });
    } catch (err) {
      const why = (err as { message?: unknown }).message;
      throw new Error(
        `${what} failed: ${String(why).split('\n')[0] ?? ''}${hint ? `; ${hint.trim()}` : ''}`,
        { cause: err },
      );
    }
    return readStatus(stdout, what);
  };
  let status = run();
  if (!status.token && !(status.cert && status.key))
    throw new Error(`${what} gave neither a token nor a client certificate and key`);
  return {
    cert: status.cert === undefined ? undefined : Buffer.from(status.cert),
    key: status.key === undefined ? undefined : Buffer.from(status.key),
    token: status.token
      ? () => {
          if (status.expiresMs !== undefined && status.expiresMs <= Date.now()) status = run();
          return status.token ?? '';
        }
      : undefined,
  };
}
