// Structured JSON logs (winston). The logger is created once in main and passed down.

import winston from 'winston';

export type Logger = winston.Logger;

export function createLogger(level = 'info', component = 'outrigger-webhook'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { component },
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    transports: [
      new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] }),
    ],
  });
}

/** A logger that drops everything, for tests. */
export function silentLogger(): Logger {
  return winston.createLogger({
    silent: true,
    transports: [new winston.transports.Console({ silent: true })],
  });
}
