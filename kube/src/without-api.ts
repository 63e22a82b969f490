// The part of this package that needs no Kubernetes API: certificate validity, errors, flags,
// file polling, the probe server, running a main(), the logging interface. A component that may
// run without an API server (the webhook standalone, with files) imports this,
// `@outrigger/kube/without-api`, and so loads neither the API client nor the watches until it
// has an API server to talk to.

export * from './certificate-validity';
export * from './errors';
export * from './flags';
export * from './log';
export * from './poll';
export * from './probe-server';
export * from './run-main';
