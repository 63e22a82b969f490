// The end-to-end harness: everything a suite needs to drive the cluster under test.

export * from './admission-server';
export * from './api-error';
export * from './apply';
export * from './build';
export * from './chaos';
export * from './cluster';
export * from './disrupt';
export * from './dump';
export * from './environment';
export * from './fixtures';
export * from './health-watch';
export * from './http-probe';
export * from './log-dir';
export * from './namespace';
export * from './paths';
export * from './port';
export * from './proc-fs';
export * from './process';
export * from './refusals';
export * from './rollout';
export * from './service-account';
export * from './tls';
export * from './versions';
export * from './wait';
export * from './install';
