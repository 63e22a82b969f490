// Admission objects that make the API server turn down writes to a test's Deployments: a
// ValidatingAdmissionPolicy that refuses one Deployment's updates by a namespace's
// ServiceAccounts (a policy engine's "no", HTTP 422), and a validating webhook nobody answers
// with failurePolicy Fail (HTTP 500 for every update in a namespace: trouble, not a "no"). The
// API server takes a moment to enforce a new one: waitForDryRun() shows when.

import { type KubernetesObject } from '@kubernetes/client-node';
import { MERGE_PATCH, type Cluster } from './cluster';
import { done, pending, waitFor } from './wait';

/** A dry-run patch carries this annotation; the policy refuses it like a ServiceAccount's write. */
export const PROBE_ANNOTATION = 'e2e.outrigger.dev/probe';

const UPDATE_DEPLOYMENTS = {
  apiGroups: ['apps'],
  apiVersions: ['v1'],
  operations: ['UPDATE'],
  resources: ['deployments'],
};

const inNamespace = (namespace: string) => ({
  matchLabels: { 'kubernetes.io/metadata.name': namespace },
});

export interface RefusingPolicyOptions {
  /** Names the policy and its binding (cluster-wide objects: make it the run's). */
  name: string;
  namespace: string;
  /** The Deployment whose updates are refused. */
  deployment: string;
  /** Whose updates: every ServiceAccount of this namespace. */
  accountsOf: string;
  message: string;
}

/** The policy and its binding, in the order to apply them (remove() takes them in reverse). */
export function refusingPolicy(options: RefusingPolicyOptions): KubernetesObject[] {
  const account = `system:serviceaccount:${options.accountsOf}:`;
  const probed = `(has(object.metadata.annotations) && '${PROBE_ANNOTATION}' in object.metadata.annotations)`;
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: options.name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: { resourceRules: [UPDATE_DEPLOYMENTS] },
      validations: [
        {
          expression: `object.metadata.name != '${options.deployment}' || !(request.userInfo.username.startsWith('${account}') || ${probed})`,
          message: options.message,
        },
      ],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: options.name },
    spec: {
      policyName: options.name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: inNamespace(options.namespace) },
    },
  };
  return [policy, binding];
}

/** Fails every update of a Deployment in `namespace` with HTTP 500, "failed calling webhook". */
export function failingWebhook(options: { name: string; namespace: string }): KubernetesObject {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: options.name },
    webhooks: [
      {
        name: 'unanswered.e2e.outrigger.dev',
        // Port 1: nothing listens, so every call is refused at once.
        clientConfig: { url: 'https://127.0.0.1:1/validate' },
        rules: [UPDATE_DEPLOYMENTS],
        namespaceSelector: inNamespace(options.namespace),
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 2,
      },
    ],
  } as KubernetesObject;
}

/**
 * Waits until a dry-run patch of the Deployment (with PROBE_ANNOTATION) fails with a message
 * containing `refusal`, or, with `refusal` undefined, until it is allowed again.
 */
export async function waitForDryRun(
  cluster: Cluster,
  target: { namespace: string; name: string; refusal: string | undefined },
): Promise<void> {
  const { namespace, name, refusal } = target;
  const what = refusal === undefined ? 'allow' : `refuse with "${refusal}"`;
  await waitFor(`the API server to ${what} an update of ${namespace}/${name}`, async () => {
    try {
      await cluster.apps.patchNamespacedDeployment(
        {
          namespace,
          name,
          body: { metadata: { annotations: { [PROBE_ANNOTATION]: 'x' } } },
          dryRun: 'All',
        },
        MERGE_PATCH,
      );
      return refusal === undefined ? done(undefined) : pending('the dry run was allowed');
    } catch (error) {
      const message = String(error);
      return refusal !== undefined && message.includes(refusal)
        ? done(undefined)
        : pending(message);
    }
  });
}
