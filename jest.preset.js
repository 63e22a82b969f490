// Shared jest settings: TypeScript through swc (to CommonJS), and the workspace packages
// resolved to their sources so tests never need a prior build.
const path = require('node:path');

// ESM-only packages that jest must transform to load them from CommonJS tests.
const esmPackages = [
  '@kubernetes/client-node',
  'openid-client',
  'oauth4webapi',
  'jose',
  'socks-proxy-agent',
  'agent-base',
];

/** @param {string} dir the workspace folder */
module.exports = function preset(dir) {
  return {
    displayName: path.basename(dir),
    rootDir: dir,
    testEnvironment: 'node',
    testMatch: ['<rootDir>/test/**/*.test.ts'],
    transform: {
      '^.+\\.(t|j|mj)s$': [
        '@swc/jest',
        {
          jsc: { parser: { syntax: 'typescript' }, target: 'es2023' },
          module: { type: 'commonjs' },
        },
      ],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${esmPackages.join('|')})/)`],
    moduleNameMapper: {
      '^@outrigger/shared$': path.join(__dirname, 'shared/src/index.ts'),
      '^@outrigger/kube$': path.join(__dirname, 'kube/src/index.ts'),
      '^@outrigger/testkit$': path.join(__dirname, 'testkit/src/index.ts'),
      '^@outrigger/kube/without-api$': path.join(__dirname, 'kube/src/without-api.ts'),
    },
  };
};
