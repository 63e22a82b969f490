// The command-line conventions both binaries share: every flag is also an environment variable
// (--config-map is OUTRIGGER_CONFIG_MAP), the command line wins, and a bad value stops the
// process with a message that names the flag and what it accepts.

import { parseArgs } from 'node:util';
import type { ListenAddress } from './probe-server';

export interface ObjectRef {
  namespace: string;
  name: string;
}

export class FlagError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

/**
 * Whether the command line asks for the usage (`--help` or `-h`, before any `--`): it is then
 * printed on stdout and the process exits 0, as users of any command-line tool expect.
 */
export function helpRequested(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

export function envName(flag: string): string {
  return `OUTRIGGER_${flag.toUpperCase().replace(/-/g, '_')}`;
}

export function parseAddress(flag: string, value: string): ListenAddress {
  const m = /^(.*):(\d{1,5})$/.exec(value);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    throw new FlagError(
      `--${flag} must be HOST:PORT or :PORT, such as :8443 or 127.0.0.1:8443; got ${JSON.stringify(value)}`,
    );
  return { host: (m[1] ?? '').replace(/^\[(.*)\]$/, '$1'), port };
}

export function parseRef(flag: string, value: string): ObjectRef {
  const m = /^([a-z0-9-]+)\/([a-z0-9.-]+)$/.exec(value);
  if (!m?.[1] || !m[2])
    throw new FlagError(
      `--${flag} must be NAMESPACE/NAME, such as outrigger-system/outrigger-config; got ${JSON.stringify(value)}`,
    );
  return { namespace: m[1], name: m[2] };
}

export function oneOf<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new FlagError(
    `--${flag} must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}`,
  );
}

/**
 * Runs `parse`; a FlagError about a flag whose value came from its environment variable names
 * that variable too, as the user set the variable and may never have typed the flag.
 */
export function namingTheVariable<T>(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  parse: () => T,
): T {
  try {
    return parse();
  } catch (err) {
    const flag = err instanceof FlagError ? /^--([a-z0-9-]+)/.exec(err.message)?.[1] : undefined;
    const typed = argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
    if (!flag || typed || env[envName(flag)] === undefined) throw err;
    throw new FlagError(
      (err as Error).message.replace(`--${flag}`, `--${flag} (set by ${envName(flag)})`),
    );
  }
}

export interface FlagSpec {
  /** Every flag name, without the dashes. */
  names: readonly string[];
  defaults: Readonly<Record<string, string>>;
  /** Printed after a parse error. */
  usage: string;
}

/** Raw flag values (all strings): command line first, then environment, then defaults. */
export function readFlags(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  spec: FlagSpec,
): Record<string, string | undefined> {
  const options = Object.fromEntries(spec.names.map((f) => [f, { type: 'string' as const }]));
  let given: Record<string, string | boolean | (string | boolean)[] | undefined>;
  try {
    given = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (err) {
    throw new FlagError(`${(err as Error).message}\n\n${spec.usage}`);
  }
  const out: Record<string, string | undefined> = {};
  for (const flag of spec.names) {
    const value = given[flag];
    out[flag] = typeof value === 'string' ? value : (env[envName(flag)] ?? spec.defaults[flag]);
  }
  return out;
}
