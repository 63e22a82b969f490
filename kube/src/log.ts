// Logging: the structural interface this package's watches log through, and the structured JSON
// logger both components write with: one object a line, in the shape winston's JSON format
// gives (keys sorted), without loading winston. An Error among the fields is written as what it
// says (an API error as the server's message, a network error with its cause), never as the
// `{}` JSON makes of it.

import { apiErrorMessage } from './errors';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface KubeLogger {
  log(level: LogLevel, message: string, meta?: Record<string, unknown>): unknown;
}

export type LogFields = Record<string, unknown>;

export interface Logger extends KubeLogger {
  error(message: string, meta?: LogFields): void;
  warn(message: string, meta?: LogFields): void;
  info(message: string, meta?: LogFields): void;
  debug(message: string, meta?: LogFields): void;
  isDebugEnabled(): boolean;
}

const RANK: Readonly<Record<LogLevel, number>> = { error: 0, warn: 1, info: 2, debug: 3 };

/** The message of an error, and of its cause when that adds something ("fetch failed: ..."). */
export function errorText(err: Error): string {
  const text = apiErrorMessage(err);
  const cause: unknown = err.cause;
  if (!(cause instanceof Error)) return text;
  const more = errorText(cause);
  return more && !text.includes(more) ? `${text}: ${more}` : text;
}

/** Sorts every object's keys (as winston's JSON does) and writes an Error as its text. */
function replacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return errorText(value);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const object = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object).sort()) out[key] = object[key];
  return out;
}

/**
 * One JSON object a line: the fields, `component`, `level`, `message` and an ISO `timestamp`,
 * keys sorted. Lines below `level` are dropped before anything is built.
 */
export function jsonLogger(options: {
  level: LogLevel;
  component: string;
  /** Where lines go; stderr by default. */
  write?: (line: string) => void;
}): Logger {
  const write = options.write ?? ((line: string) => void process.stderr.write(line));
  const threshold = RANK[options.level];
  const log = (level: LogLevel, message: string, meta?: LogFields): void => {
    if (RANK[level] > threshold) return;
    const entry = {
      component: options.component,
      ...meta,
      level,
      message,
      timestamp: new Date().toISOString(),
    };
    let line: string;
    try {
      line = JSON.stringify(entry, replacer);
    } catch (err) {
      // A field JSON cannot hold (a cycle, a BigInt): the line still says what happened.
      const { component, timestamp } = entry;
      const fields = `not written: ${(err as Error).message}`;
      line = JSON.stringify({ component, fields, level, message, timestamp });
    }
    write(`${line}\n`);
  };
  return {
    log,
    error: (message, meta) => log('error', message, meta),
    warn: (message, meta) => log('warn', message, meta),
    info: (message, meta) => log('info', message, meta),
    debug: (message, meta) => log('debug', message, meta),
    isDebugEnabled: () => threshold >= RANK.debug,
  };
}

/** A logger that drops everything, for tests. */
export function silentLogger(): Logger {
  return jsonLogger({ level: 'error', component: 'test', write: () => undefined });
}
