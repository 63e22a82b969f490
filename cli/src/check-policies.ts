// The admission-policy modes' check: the controller runs with --admission-mode policy or both,
// a policy for the revision in force is there, and nothing asks for what a policy cannot do: it
// reads no namespace's annotations (overrides and set opt-outs set on a namespace), and in the
// policy mode it applies no per-workload override either.

import { httpStatus, workloadPath, type WorkloadKind } from '@outrigger/kube';
import {
  OVERRIDE_PREFIX,
  POLICY_API_VERSIONS,
  POLICY_MANAGED_BY,
  POLICY_MANAGER,
  SETS_PREFIX,
  configRevision,
  policyName,
  readConfigMap,
} from '@outrigger/shared';
import { configMapPath, namespacePath } from './api-paths';
import { fail, pass, type Check, type Ctx } from './check';
import { controllerArgs } from './controller-args';

interface Meta {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
}
interface Workload extends Meta {
  spec?: { template?: Meta };
}
const KINDS: WorkloadKind[] = ['Deployment', 'StatefulSet', 'DaemonSet'];

/** The names of the policies the controller keeps, in the newest API version served. */
async function keptPolicies(ctx: Ctx): Promise<string[] | undefined> {
  for (const version of POLICY_API_VERSIONS) {
    try {
      const list = await ctx.api.get<{ items?: Meta[] }>(
        `/apis/${version}/mutatingadmissionpolicies`,
        { labelSelector: `${POLICY_MANAGED_BY}=${POLICY_MANAGER}` },
      );
      return (list.items ?? []).map((p) => p.metadata?.name ?? '');
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
    }
  }
  return undefined;
}

/** The annotations a policy cannot read: overrides and set opt-outs on namespaces. */
const namespaceOnly = (key: string): boolean =>
  key.startsWith(OVERRIDE_PREFIX) || key.endsWith(`.${SETS_PREFIX}/inject`);

/** Namespaces annotated with what a policy cannot read. */
async function namespacesAsking(ctx: Ctx): Promise<string[]> {
  const namespaces = await ctx.api.get<{ items?: Meta[] }>(namespacePath());
  return (namespaces.items ?? []).flatMap((ns) => {
    const keys = Object.keys(ns.metadata?.annotations ?? {}).filter(namespaceOnly);
    return keys.length > 0 ? [`namespace ${ns.metadata?.name ?? ''} (${keys.join(', ')})`] : [];
  });
}

/** Workloads whose template asks for overrides. */
async function workloadsAsking(ctx: Ctx, kind: WorkloadKind): Promise<string[]> {
  const list = await ctx.api.get<{ items?: Workload[] }>(workloadPath(kind));
  return (list.items ?? []).flatMap((w) => {
    const annotations = w.spec?.template?.metadata?.annotations ?? {};
    const keys = Object.keys(annotations).filter((k) => k.startsWith(OVERRIDE_PREFIX));
    const meta = w.metadata ?? {};
    return keys.length > 0
      ? [`${kind} ${meta.namespace ?? ''}/${meta.name ?? ''} (${keys.join(', ')})`]
      : [];
  });
}

async function whatPoliciesCannotDo(ctx: Ctx, mode: string): Promise<string[]> {
  const found = await namespacesAsking(ctx);
  if (mode !== 'policy') return found;
  for (const kind of KINDS) found.push(...(await workloadsAsking(ctx, kind)));
  return found;
}

export const policiesInForce: Check = async (ctx) => {
  const mode = (await controllerArgs(ctx))?.admissionMode;
  if (mode === undefined || mode === 'webhook')
    return pass('admission.mode=webhook: the webhook injects every pod, no policies to keep');
  const kept = await keptPolicies(ctx);
  if (kept === undefined)
    return fail(
      `admission.mode=${mode}, but the API server serves no MutatingAdmissionPolicy`,
      'turn the MutatingAdmissionPolicy feature gate on and serve admissionregistration.k8s.io/v1beta1 (Kubernetes 1.34 and 1.35), or install with admission.mode=webhook',
    );
  const cm = await ctx.api.get<{ data?: Record<string, string> }>(
    configMapPath(ctx.namespace, ctx.configMap),
  );
  const reading = readConfigMap(cm, { namespace: ctx.namespace, name: ctx.configMap });
  if ('ok' in reading) {
    const want = policyName('proxy', configRevision(reading.config));
    if (!kept.includes(want))
      return fail(
        `no policy ${want} for the revision in force (${kept.length} kept)`,
        'the controller compiles it once it leads: see the leader check above and its log',
      );
  }
  const unsupported = await whatPoliciesCannotDo(ctx, mode);
  if (unsupported.length > 0)
    return fail(
      `the policies cannot apply what these ask for: ${unsupported.join('; ')}`,
      mode === 'policy'
        ? 'a policy reads neither namespace annotations nor overrides: move namespace settings onto the workloads and use admission.mode=both, where the webhook takes pods that ask for overrides'
        : 'a policy reads no namespace annotations: set these on the workloads instead (the webhook takes pods that ask for overrides)',
    );
  return pass(
    `admission.mode=${mode}: ${kept.length} policies kept, the revision in force among them`,
  );
};
