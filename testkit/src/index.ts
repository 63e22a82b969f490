// What the tests and benchmarks of every workspace share. Never imported by a component.

export * from './port';
export * from './serving-cert';
export * from './shipped';
