// Kubernetes and file I/O shared by the webhook and the controller (never by `shared`, which
// stays pure).

export * from './kube';
export * from './leader';
export * from './log';
export * from './poll';
export * from './probe-server';
export * from './flags';
export * from './errors';
export * from './workloads';
export * from './run-main';
