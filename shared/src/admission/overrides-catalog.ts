// The per-workload settings users may override with `config.outrigger.dev/<setting>`
// annotations; the configuration says which of them are allowed.

export const OVERRIDE_NAMES = [
  'proxy-cpu-request',
  'proxy-cpu-limit',
  'proxy-memory-request',
  'proxy-memory-limit',
  'proxy-log-level',
  'proxy-image',
  'skip-inbound-ports',
  'skip-outbound-ports',
  'native-sidecar',
  'init-container',
] as const;

export type OverrideName = (typeof OVERRIDE_NAMES)[number];

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
