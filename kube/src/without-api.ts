// The part of this package that needs no Kubernetes API: flags, file polling, the probe server,
// running a main(), the logging interface. A component that may run without an API server (the
// webhook standalone, with files) imports this, `@outrigger/kube/without-api`, and loads the
// Kubernetes client (about 60 MiB resident) only once it has an API server to talk to.

export * from './errors';
export * from './flags';
export * from './log';
export * from './poll';
export * from './probe-server';
export * from './run-main';
