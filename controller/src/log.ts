// Structured JSON logs (winston), as the webhook writes them. Created once in main, passed down.

import winston from 'winston';

export type Logger = winston.Logger;

export function createLogger(level = 'info'): Logger {
  return winston.createLogger({
    level,
    defaultMeta: { component: 'outrigger-controller' },
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
