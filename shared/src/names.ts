// The names Outrigger puts on the wire (DESIGN section 3). Each is defined here once; every
// other part, the docs and the tests import them from here.

export const PREFIX = 'outrigger.dev';
export const OVERRIDE_PREFIX = 'config.outrigger.dev/';

/** Namespace annotation (admin) and pod/template label or annotation (user): enabled | disabled. */
export const INJECT = `${PREFIX}/inject`;
/** Namespace label, mirrored by the controller from the INJECT annotation. */
export const INJECTION_LABEL = `${PREFIX}/injection`;

/** Template annotations: the stamp. */
export const OWNER_KIND = `${PREFIX}/owner-kind`;
export const OWNER_NAME = `${PREFIX}/owner-name`;
export const CONFIG_REVISION = `${PREFIX}/config-revision`;
/** Template label: part of the stamp, so escaped pods can be selected by label. */
export const STAMPED = `${PREFIX}/stamped`;

/** Injected pod labels. OWNER_KIND and OWNER_NAME are also pod labels. */
export const REVISION = `${PREFIX}/revision`;
/** Label on pods the webhook saw but did not inject; the value is the skip reason. */
export const SKIPPED = `${PREFIX}/skipped`;
/** Pod annotation: what injection added, so tools can tell our parts from the user's. */
export const STATUS = `${PREFIX}/status`;
/** Template annotation: `disabled` opts an owner out of automatic restarts. */
export const AUTO_RESTART = `${PREFIX}/auto-restart`;

/** Selector of escaped pods: stamped, never injected, never seen by the webhook. */
export const ESCAPED_POD_SELECTOR = `${STAMPED}=true,!${REVISION},!${SKIPPED}`;

export const ENABLED = 'enabled';
export const DISABLED = 'disabled';

/** The volume injection adds for the proxy's identity and sockets, and where it is mounted. */
export const IDENTITY_VOLUME = 'outrigger-identity';
export const IDENTITY_MOUNT_PATH = '/var/run/outrigger';

/** Objects the install creates. */
export const SYSTEM_NAMESPACE = 'outrigger-system';
export const CONFIG_MAP_NAME = 'outrigger-config';
export const CONFIG_MAP_KEY = 'config.yaml';
export const TLS_SECRET_NAME = 'outrigger-webhook-tls';
export const LEASE_NAME = 'outrigger-controller';
export const WEBHOOK_CONFIGURATION_NAME = 'outrigger';
export const CONTROLLER_SERVICE_ACCOUNT = 'outrigger-controller';
export const WEBHOOK_SERVICE_ACCOUNT = 'outrigger-webhook';
export const WEBHOOK_SERVICE = 'outrigger-webhook';
export const FIELD_MANAGER = 'outrigger-controller';

/** Namespaces that are never mutated, whatever their labels say. */
export const KUBERNETES_SYSTEM_NAMESPACES: readonly string[] = [
  'kube-system',
  'kube-public',
  'kube-node-lease',
];

/** Environment variables injection gives the proxy. */
export const ENV = {
  podName: 'OUTRIGGER_POD_NAME',
  podNamespace: 'OUTRIGGER_POD_NAMESPACE',
  ownerKind: 'OUTRIGGER_OWNER_KIND',
  ownerName: 'OUTRIGGER_OWNER_NAME',
  revision: 'OUTRIGGER_REVISION',
  logLevel: 'OUTRIGGER_LOG_LEVEL',
  inboundPort: 'OUTRIGGER_INBOUND_PORT',
  outboundPort: 'OUTRIGGER_OUTBOUND_PORT',
  adminPort: 'OUTRIGGER_ADMIN_PORT',
} as const;

/** Marks of other meshes: a pod that carries one already has a proxy. */
export const OTHER_MESH_CONTAINERS: readonly string[] = ['istio-proxy', 'linkerd-proxy'];
export const OTHER_MESH_ANNOTATIONS: readonly string[] = [
  'sidecar.istio.io/status',
  'linkerd.io/proxy-version',
];
