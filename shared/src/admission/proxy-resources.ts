// The proxy's resources: the configured ones, or with a pod's resource overrides applied.

import type { Config } from '../config/config';
import { deepFreeze, type ResourceRequirements } from '../kubernetes/k8s';
import type { Overrides } from './overrides';
import { compareQuantities } from '../config/schema';

/** The overrides that change the proxy's resources. */
const RESOURCE_OVERRIDES = [
  ['cpu', 'proxy-cpu-request', 'proxy-cpu-limit'],
  ['memory', 'proxy-memory-request', 'proxy-memory-limit'],
] as const;

interface ProxyResources {
  resources: ResourceRequirements;
  warnings: string[];
}

/** The resources of configurations as they are, for pods without resource overrides (nearly all). */
const configuredResources = new WeakMap<Config, Readonly<ProxyResources>>();

/**
 * The proxy's resources with the overrides applied. An override that would leave a request
 * above its limit is dropped with a warning: the API server would reject such a pod.
 */
export function proxyResources(config: Config, overrides: Overrides): ProxyResources {
  const overridden = RESOURCE_OVERRIDES.some(
    ([, request, limit]) => overrides[request] !== undefined || overrides[limit] !== undefined,
  );
  if (overridden) return resourcesWith(config, overrides);
  let configured = configuredResources.get(config);
  if (!configured) {
    const { resources, warnings } = resourcesWith(config, {});
    configured = Object.freeze({ resources: deepFreeze(resources), warnings });
    configuredResources.set(config, configured);
  }
  return { resources: configured.resources, warnings: [...configured.warnings] };
}

function resourcesWith(config: Config, overrides: Overrides): ProxyResources {
  const base = config.proxy.resources;
  const warnings: string[] = [];
  const requests = { ...base.requests };
  const limits = { ...base.limits };
  for (const [resource, requestOverride, limitOverride] of RESOURCE_OVERRIDES) {
    const request = overrides[requestOverride];
    const limit = overrides[limitOverride];
    const r = request ?? requests[resource];
    const l = limit ?? limits[resource];
    if (r !== undefined && l !== undefined && compareQuantities(r, l) > 0) {
      warnings.push(
        `${resource} request ${r} would exceed the limit ${l}; the proxy keeps the configured ${resource} resources (set both the request and the limit overrides)`,
      );
      continue;
    }
    if (request !== undefined) requests[resource] = request;
    if (limit !== undefined) limits[resource] = limit;
  }
  const resources: ResourceRequirements = {};
  if (Object.keys(requests).length > 0) resources.requests = requests;
  if (Object.keys(limits).length > 0) resources.limits = limits;
  return { resources, warnings };
}
