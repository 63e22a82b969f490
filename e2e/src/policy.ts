// What the admission-policy suites share: the policies the product compiles, made one test run's
// own (their names suffixed, their bindings also requiring the run's namespace label, as
// TestInstall does for the webhook), and whether this API server serves the API at all.

import type { KubernetesObject } from '@kubernetes/client-node';
import {
  POLICY_API_VERSIONS,
  POLICY_MANAGED_BY,
  POLICY_MANAGER,
  type PolicyApiVersion,
  type PolicyObject,
} from '@outrigger/shared';
import type { Cluster } from './cluster';

/** The label a run's policy namespaces carry, and its bindings require. */
export const POLICY_RUN_LABEL = 'e2e.outrigger.dev/policy-run';

/** The newest API version this server serves MutatingAdmissionPolicy in, or undefined. */
export async function policyApiVersion(cluster: Cluster): Promise<PolicyApiVersion | undefined> {
  for (const version of POLICY_API_VERSIONS) {
    const served = await cluster.objects
      .list(version, 'MutatingAdmissionPolicy')
      .then(() => true)
      .catch(() => false);
    if (served) return version;
  }
  return undefined;
}

/** The MutatingAdmissionPolicies the controller keeps (its managed-by label). */
export async function controllerPolicies(
  cluster: Cluster,
  version: PolicyApiVersion | undefined,
): Promise<{ metadata?: { name?: string; ownerReferences?: { kind: string; name: string }[] } }[]> {
  if (!version) throw new Error('the API server serves no MutatingAdmissionPolicy');
  const list = (await cluster.objects.list(
    version,
    'MutatingAdmissionPolicy',
    undefined, // namespace
    undefined, // pretty
    undefined, // exact
    undefined, // export
    undefined, // fieldSelector
    `${POLICY_MANAGED_BY}=${POLICY_MANAGER}`,
  )) as {
    items: { metadata?: { name?: string; ownerReferences?: { kind: string; name: string }[] } }[];
  };
  return list.items;
}

/** One line on stderr saying why a policy suite did not run. */
export function policyApiAbsent(suite: string): void {
  process.stderr.write(
    `[e2e] ${suite} skipped: the API server serves no MutatingAdmissionPolicy (Kubernetes 1.36, or 1.34/1.35 with --feature-gates=MutatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true)\n`,
  );
}

/** The compiled policies and bindings made run `run`'s own. */
export function forRun(objects: readonly PolicyObject[], run: string): KubernetesObject[] {
  const own = (name: string) => `${name}-e2e-${run}`;
  return objects.map((o) => {
    const copy = JSON.parse(JSON.stringify(o)) as PolicyObject;
    copy.metadata.name = own(o.metadata.name);
    if (copy.kind === 'MutatingAdmissionPolicyBinding') {
      const spec = copy.spec as {
        policyName: string;
        matchResources: { namespaceSelector: { matchExpressions: unknown[] } };
      };
      spec.policyName = own(spec.policyName);
      spec.matchResources.namespaceSelector.matchExpressions.push({
        key: POLICY_RUN_LABEL,
        operator: 'In',
        values: [run],
      });
    }
    return copy;
  });
}
