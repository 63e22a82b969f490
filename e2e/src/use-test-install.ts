// The install a suite of Outrigger's processes on this host runs against (TestInstall), set up
// and taken down the same way by every such suite: its binaries built from the working tree, the
// install set up, then the suite's own start; after the suite, the install taken down, every
// process it started stopped, and the cluster's connections closed.

import { buildWorkspace } from './build';
import type { TestInstall } from './install';
import { stopAllProcesses } from './process';

export interface TestInstallSuite {
  /** The workspaces whose binaries the suite runs (webhook, controller, cli). */
  build: string[];
  /** The suite's own start, once the install is up: controllers, namespaces, workloads. */
  then?: () => Promise<void>;
  /** The beforeAll's deadline; 120 s unless told. */
  setupTimeoutMs?: number;
}

/** Registers the suite's beforeAll and afterAll; call it where the suite's tests are declared. */
export function useTestInstall(install: TestInstall, suite: TestInstallSuite): void {
  beforeAll(async () => {
    await Promise.all(suite.build.map((w) => buildWorkspace(w)));
    await install.setup();
    await suite.then?.();
  }, suite.setupTimeoutMs ?? 120_000);

  afterAll(async () => {
    await install.teardown();
    await stopAllProcesses();
    await install.cluster.close();
  }, 60_000);
}
