// Unit and component tests of every workspace; the end-to-end suites have e2e/jest.config.js.
const preset = require('./jest.preset.js');

module.exports = {
  projects: ['shared', 'kube', 'testkit', 'webhook', 'controller', 'cli'].map((w) =>
    preset(`${__dirname}/${w}`),
  ),
};
