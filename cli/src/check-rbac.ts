// The rights each component needs, as the shipped RBAC grants them, checked for the install's
// ServiceAccounts with SubjectAccessReviews: a missing one is named with the object and verb.

import { CONTROLLER_SERVICE_ACCOUNT, LEASE_NAME, WEBHOOK_SERVICE_ACCOUNT } from '@outrigger/shared';
import { SUBJECT_ACCESS_REVIEWS_PATH } from './api-paths';
import { fail, pass, type Check } from './check';
import { controllerArgs } from './controller-args';

interface Right {
  account: string;
  verb: string;
  group: string;
  resource: string;
  name?: string;
  scope: 'cluster' | 'own';
}

const RIGHTS: Right[] = [
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'patch',
    group: '',
    resource: 'namespaces',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'watch',
    group: 'apps',
    resource: 'deployments',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'patch',
    group: 'apps',
    resource: 'statefulsets',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'patch',
    group: 'apps',
    resource: 'daemonsets',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'watch',
    group: '',
    resource: 'pods',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'delete',
    group: '',
    resource: 'pods',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'create',
    group: '',
    resource: 'events',
    scope: 'cluster',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'patch',
    group: '',
    resource: 'configmaps',
    name: 'config',
    scope: 'own',
  },
  {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'update',
    group: 'coordination.k8s.io',
    resource: 'leases',
    name: LEASE_NAME,
    scope: 'own',
  },
  {
    account: WEBHOOK_SERVICE_ACCOUNT,
    verb: 'watch',
    group: '',
    resource: 'namespaces',
    scope: 'cluster',
  },
  {
    account: WEBHOOK_SERVICE_ACCOUNT,
    verb: 'watch',
    group: '',
    resource: 'configmaps',
    name: 'config',
    scope: 'own',
  },
];

/**
 * The admission-policy modes' rights: keeping the policies and their bindings, and reading the
 * ClusterRole that owns them (uninstalling deletes it, and so them).
 */
function policyRights(owner: string): Right[] {
  const group = 'admissionregistration.k8s.io';
  const kept = ['mutatingadmissionpolicies', 'mutatingadmissionpolicybindings'].flatMap(
    (resource) =>
      ['list', 'patch', 'delete'].map((verb): Right => ({
        account: CONTROLLER_SERVICE_ACCOUNT,
        verb,
        group,
        resource,
        scope: 'cluster',
      })),
  );
  const ownerRight: Right = {
    account: CONTROLLER_SERVICE_ACCOUNT,
    verb: 'get',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterroles',
    name: owner,
    scope: 'cluster',
  };
  return [...kept, ownerRight];
}

export const rbacSufficient: Check = async (ctx) => {
  const { api, namespace, configMap } = ctx;
  const args = await controllerArgs(ctx);
  const rights =
    args && args.admissionMode !== 'webhook'
      ? [...RIGHTS, ...policyRights(args.policyOwner)]
      : RIGHTS;
  const missing: string[] = [];
  for (const r of rights) {
    const name = r.name === 'config' ? configMap : r.name;
    const review = await api.create<{ status?: { allowed?: boolean } }>(
      SUBJECT_ACCESS_REVIEWS_PATH,
      {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: `system:serviceaccount:${namespace}:${r.account}`,
          groups: [
            'system:serviceaccounts',
            `system:serviceaccounts:${namespace}`,
            'system:authenticated',
          ],
          resourceAttributes: {
            verb: r.verb,
            group: r.group,
            resource: r.resource,
            ...(name ? { name } : {}),
            ...(r.scope === 'own' ? { namespace } : {}),
          },
        },
      },
    );
    if (!review.status?.allowed)
      missing.push(`${r.account} cannot ${r.verb} ${r.resource}${name ? ` ${name}` : ''}`);
  }
  if (missing.length > 0)
    return fail(
      missing.join('; '),
      'apply the ClusterRoles and Roles of the install again (helm upgrade, or kubectl apply -f manifests/install.yaml)',
    );
  return pass(`both ServiceAccounts have the ${rights.length} rights checked`);
};
