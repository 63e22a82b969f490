// What the controller runs with, as its Deployment says: the admission mode and the ClusterRole
// that owns the policies, read once from its containers' arguments, for the checks that depend
// on them (RBAC, the policies in force).

import { httpStatus, workloadPath } from '@outrigger/kube';
import { CONTROLLER_SERVICE_ACCOUNT } from '@outrigger/shared';
import type { Ctx } from './check';

interface ControllerDeployment {
  spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
}

export interface ControllerArgs {
  /** --admission-mode: webhook, policy or both; `webhook` when it says none. */
  admissionMode: string;
  /** --policy-owner; the controller's default when it says none. */
  policyOwner: string;
}

/** Read once per run of the checks: the RBAC and the policy checks both ask. */
const read = new WeakMap<Ctx, Promise<ControllerArgs | undefined>>();

/** The controller's arguments; undefined when its Deployment is not there. */
export function controllerArgs(ctx: Ctx): Promise<ControllerArgs | undefined> {
  let args = read.get(ctx);
  if (!args) {
    args = readControllerArgs(ctx);
    read.set(ctx, args);
  }
  return args;
}

async function readControllerArgs(ctx: Ctx): Promise<ControllerArgs | undefined> {
  let d: ControllerDeployment;
  try {
    d = await ctx.api.get<ControllerDeployment>(
      workloadPath('Deployment', ctx.namespace, CONTROLLER_SERVICE_ACCOUNT),
    );
  } catch (err) {
    if (httpStatus(err) === 404) return undefined;
    throw err;
  }
  const args = d.spec?.template?.spec?.containers?.flatMap((c) => c.args ?? []) ?? [];
  const flag = (name: string): string | undefined =>
    args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  return {
    admissionMode: flag('admission-mode') ?? 'webhook',
    policyOwner: flag('policy-owner') ?? CONTROLLER_SERVICE_ACCOUNT,
  };
}
