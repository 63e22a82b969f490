// The end-to-end suites: a real control plane (the local one of e2e/cluster, started by global
// setup, or the cluster of KUBECONFIG). Run with `make e2e` (jest -c e2e/jest.config.js --runInBand).
const preset = require('../jest.preset.js');

module.exports = {
  ...preset(__dirname),
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/src/global-setup.ts',
  globalTeardown: '<rootDir>/src/global-teardown.ts',
  // Workloads really roll out and the API server really calls webhooks: give them time.
  testTimeout: 120_000,
  slowTestThreshold: 30,
};
