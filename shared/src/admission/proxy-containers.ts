// The proxy's containers: the proxy itself (a native sidecar or a classic one) and the init
// container that redirects the pod's traffic to it, from the configuration and the overrides.

import type { Container, EnvVar, ResourceRequirements } from '../kubernetes/k8s';
import { ENV, IDENTITY_MOUNT_PATH, IDENTITY_VOLUME, OWNER_KIND, OWNER_NAME } from '../names';
import type { Overrides } from './overrides';
import type { Config } from '../config/config';

/** What the proxy's containers are built from. */
export interface ProxyBuild {
  snapshot: { readonly config: Config; readonly revision: string };
  overrides: Overrides;
  native: boolean;
  resources: ResourceRequirements;
}

/** The proxy's environment; the pod-specific values come through the downward API. */
function proxyEnv(build: ProxyBuild): EnvVar[] {
  const { config, revision } = build.snapshot;
  const { ports } = config.proxy;
  const fieldRef = (fieldPath: string) => ({ fieldRef: { fieldPath } });
  return [
    { name: ENV.podName, valueFrom: fieldRef('metadata.name') },
    { name: ENV.podNamespace, valueFrom: fieldRef('metadata.namespace') },
    { name: ENV.ownerKind, valueFrom: fieldRef(`metadata.annotations['${OWNER_KIND}']`) },
    { name: ENV.ownerName, valueFrom: fieldRef(`metadata.annotations['${OWNER_NAME}']`) },
    { name: ENV.revision, value: revision },
    { name: ENV.logLevel, value: build.overrides['proxy-log-level'] ?? config.proxy.logLevel },
    { name: ENV.inboundPort, value: String(ports.inbound) },
    { name: ENV.outboundPort, value: String(ports.outbound) },
    { name: ENV.adminPort, value: String(ports.admin) },
    ...config.proxy.env,
  ];
}

export function proxyContainer(build: ProxyBuild): Container {
  const p = build.snapshot.config.proxy;
  const c: Container = {
    name: p.name,
    image: build.overrides['proxy-image'] ?? p.image,
    imagePullPolicy: p.imagePullPolicy,
  };
  if (p.args.length > 0) c.args = [...p.args];
  c.ports = [
    { name: 'outrigger-proxy', containerPort: p.ports.inbound, protocol: 'TCP' },
    { name: 'outrigger-admin', containerPort: p.ports.admin, protocol: 'TCP' },
  ];
  c.env = proxyEnv(build);
  c.resources = build.resources;
  for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe'] as const) {
    if (p[probe]) c[probe] = p[probe];
  }
  c.securityContext = { ...p.securityContext, runAsUser: p.uid };
  c.volumeMounts = [{ name: IDENTITY_VOLUME, mountPath: IDENTITY_MOUNT_PATH }];
  c.terminationMessagePolicy = 'FallbackToLogsOnError';
  if (build.native) c.restartPolicy = 'Always';
  return c;
}

export function initContainer(build: ProxyBuild): Container {
  const { init, proxy } = build.snapshot.config;
  const skipInbound = [
    String(proxy.ports.admin),
    ...init.skipInboundPorts,
    ...(build.overrides['skip-inbound-ports'] ?? []),
  ];
  const skipOutbound = [
    ...init.skipOutboundPorts,
    ...(build.overrides['skip-outbound-ports'] ?? []),
  ];
  const args = [
    '--proxy-uid',
    String(proxy.uid),
    '--inbound-port',
    String(proxy.ports.inbound),
    '--outbound-port',
    String(proxy.ports.outbound),
    '--skip-inbound-ports',
    skipInbound.join(','),
  ];
  if (skipOutbound.length > 0) args.push('--skip-outbound-ports', skipOutbound.join(','));
  return {
    name: init.name,
    image: init.image,
    imagePullPolicy: init.imagePullPolicy,
    args: [...args, ...init.args],
    resources: init.resources,
    securityContext: init.securityContext,
    terminationMessagePolicy: 'FallbackToLogsOnError',
  };
}
