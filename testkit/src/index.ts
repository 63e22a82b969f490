// What the tests and benchmarks of every workspace share. Never imported by a component.

export * from './admission-review';
export * from './corpus';
export * from './corpus-pods';
export * from './median';
export * from './port';
export * from './process-memory';
export * from './quantile';
export * from './realistic-review';
export * from './serving-cert';
export * from './shipped';
export * from './wait-for';
export * from './sidecar-sets-yaml';
