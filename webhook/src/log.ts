// Structured JSON logs, one object a line on stderr, in the format winston's JSON gives (keys
// sorted) without loading winston. The logger is created once in main and passed down.

import { jsonLogger, type LogLevel, type Logger } from '@outrigger/kube/without-api';

export type { Logger };
export { silentLogger } from '@outrigger/kube/without-api';

export function createLogger(level: LogLevel = 'info', component = 'outrigger-webhook'): Logger {
  return jsonLogger({ level, component });
}
