// Structured JSON logs (winston), as the webhook writes them. Created once in main, passed down.
// An error among a line's fields is written as its message (an API error as the server's, a
// network error with its cause): JSON makes `{}` of an Error, which says nothing.

import { apiErrorMessage } from '@outrigger/kube';
import winston from 'winston';
import type Transport from 'winston-transport';

export type Logger = winston.Logger;

/** The message of an error, and of its cause when that adds something ("fetch failed: ..."). */
export function errorText(err: Error): string {
  const text = apiErrorMessage(err);
  const cause: unknown = err.cause;
  if (!(cause instanceof Error)) return text;
  const more = errorText(cause);
  return more && !text.includes(more) ? `${text}: ${more}` : text;
}

/** Every top-level field holding an Error becomes its text. */
const errorFields = winston.format((info) => {
  for (const [key, value] of Object.entries(info)) {
    if (value instanceof Error) info[key] = errorText(value);
  }
  return info;
});

/** `transport` replaces stderr (tests capture lines with it). */
export function createLogger(level = 'info', transport?: Transport): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { component: 'outrigger-controller' },
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      errorFields(),
      winston.format.json(),
    ),
    transports: [
      transport ??
        new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] }),
    ],
  });
}
