// Kubernetes and file I/O shared by the webhook, the controller and the CLI (never by `shared`,
// which stays pure). Nothing here loads the Kubernetes client library: the API is plain JSON
// over HTTPS (api-client.ts, cluster-access.ts).

export * from './api-client';
export * from './backoff';
export * from './certificate-validity';
export * from './cluster-access';
export * from './resilient-watch';
export * from './leader';
export * from './lease';
export * from './log';
export * from './poll';
export * from './probe-server';
export * from './flags';
export * from './errors';
export * from './workloads';
export * from './run-main';
