// The pure core shared by the webhook, the controller and the CLI.
export * from './names';
export * from './k8s';
export * from './schema';
export * from './config';
export * from './default-config';
export * from './overrides-catalog';
export * from './overrides';
export * from './revision';
export * from './owner';
export * from './decide';
export * from './label';
export * from './patch';
export * from './inject';
export * from './stamp';
export * from './manifest';
export * from './rollout-status';
export * from './plan';
