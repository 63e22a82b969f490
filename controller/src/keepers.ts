// The keepers of the controller's optional modes, each behind its own reconcile key: the webhook's
// certificates (self-managed) and the admission policies (policy and both). Built here from what
// the controller shares with them: its API client, its write gate and the inputs they read.

import type { KubeApi } from '@outrigger/kube';
import { CERTIFICATES_KEY, CertificateKeeper } from './certificates/certificate-keeper';
import type { CertificateFlags } from './flags';
import type { Logger } from './log';
import type { ControllerMetrics } from './metrics';
import {
  POLICIES_KEY,
  PolicyKeeper,
  type PolicyFlags,
  type PolicyInputs,
} from './policies/policy-keeper';
import type { Result } from './watch/queue';

export interface KeeperDeps {
  api: KubeApi;
  systemNamespace: string;
  logger: Logger;
  metrics: ControllerMetrics;
  clock: () => number;
  acquireWrite: () => Promise<void>;
  certificates?: CertificateFlags;
  policies?: PolicyFlags;
  /** What the policies are compiled from, read at each reconcile. */
  policyInputs: () => PolicyInputs;
}

export interface Keepers {
  certificates: CertificateKeeper | undefined;
  policies: PolicyKeeper | undefined;
  /** Each keeper's reconcile, by its key. */
  reconcilers: [string, () => Promise<Result>][];
}

export function makeKeepers(deps: KeeperDeps): Keepers {
  const { api, logger, metrics, acquireWrite } = deps;
  const onWrite = (resource: string, verb: string) => metrics.writes.inc({ resource, verb });
  const certificates =
    deps.certificates &&
    new CertificateKeeper({
      api,
      namespace: deps.systemNamespace,
      flags: deps.certificates,
      logger,
      acquireWrite,
      onWrite,
      clock: deps.clock,
    });
  const policies =
    deps.policies &&
    new PolicyKeeper({
      api,
      flags: deps.policies,
      systemNamespace: deps.systemNamespace,
      logger,
      acquireWrite,
      onWrite,
      inputs: deps.policyInputs,
    });
  const reconcilers: Keepers['reconcilers'] = [];
  if (certificates) reconcilers.push([CERTIFICATES_KEY, () => certificates.reconcile()]);
  if (policies) reconcilers.push([POLICIES_KEY, () => policies.reconcile()]);
  return { certificates, policies, reconcilers };
}
