// The controller's structured JSON logs, in the webhook's format (kube/src/log.ts). Created once
// in main and passed down.

import { jsonLogger, type LogLevel, type Logger } from '@outrigger/kube';

export type { Logger };
export { silentLogger } from '@outrigger/kube';

/** `write` replaces stderr (tests capture lines with it). */
export function createLogger(level: LogLevel = 'info', write?: (line: string) => void): Logger {
  return jsonLogger({ level, component: 'outrigger-controller', write });
}
