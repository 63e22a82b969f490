// The logging this package needs: a structural interface that winston's Logger (the webhook's
// and the controller's) satisfies, so this package depends on no logging library.

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

export interface KubeLogger {
  log(level: LogLevel, message: string, meta?: Record<string, unknown>): unknown;
}
