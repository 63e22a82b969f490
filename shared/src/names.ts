// The names Outrigger puts on the wire (docs/architecture.md, "Names on the wire"). Each is defined here once; every
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

/** The controller's records of its restarts, heals and wave stops, so a replacement resumes. */

/** Workload annotation: the revision Outrigger last restarted the owner to ("none": shed). */
export const RESTARTED_REVISION = `${PREFIX}/restarted-revision`;
/**
 * Workload annotation: when (RFC 3339); our deadline counts from it. Also written into the
 * template when a restart would otherwise leave the template unchanged (a heal, say), because
 * only a template change makes the owner roll.
 */
export const RESTARTED_AT = `${PREFIX}/restarted-at`;
/**
 * Workload label: the revision of our last restart, once that restart was seen complete;
 * following it ends here. Without it, an owner that finished and later lost a pod (a node went
 * down) would look like a restart of ours running past its deadline, and stop the wave. A label,
 * not an annotation: a Deployment's generation moves with its annotations (they are copied to
 * its ReplicaSets), so an annotation written after the rollout would look like a new one.
 */
export const COMPLETED_REVISION = `${PREFIX}/completed-revision`;
/** Workload annotations: the revision and time of the last heal of escaped pods. */
export const HEALED_REVISION = `${PREFIX}/healed-revision`;
export const HEALED_AT = `${PREFIX}/healed-at`;
/** ConfigMap annotation: `<revision> <why>`, written when a stall stops the wave. */
export const WAVE_STOPPED = `${PREFIX}/wave-stopped`;
/** Workload annotation: the revision the owner was restarted to as one of its wave's canaries. */
export const CANARY_REVISION = `${PREFIX}/canary-revision`;
/** Workload annotation: the revision a rollback took the owner back from. */
export const ROLLED_BACK_FROM = `${PREFIX}/rolled-back-from`;
/**
 * Workload annotation: `<revision> <pod>[,<pod>...] <time>`, the pods a forced rollback deleted
 * because the rollback from that revision left them not Ready (forced-rollback.ts).
 */
export const FORCED_ROLLBACK = `${PREFIX}/forced-rollback`;
/** ConfigMap annotation: `<revision> <stage> <since>`, the wave's progress past the canaries. */
export const WAVE_STAGE = `${PREFIX}/wave-stage`;
/** ConfigMap annotation: the last revision whose wave completed; a rollback returns to it. */
export const LAST_GOOD_REVISION = `${PREFIX}/last-good-revision`;
/** ConfigMap annotation: an admin sets it (any value) to resume a stopped wave. */
export const RESUME = `${PREFIX}/resume`;
/** ConfigMap annotation: when the controller last acted on a resume (RFC 3339). */
export const RESUMED_AT = `${PREFIX}/resumed-at`;

/**
 * The names of one sidecar set (config/sidecar-set.ts), under `<set>.sets.outrigger.dev/`: the
 * set's name is a DNS label, so each is a valid label or annotation key.
 */
export const SETS_PREFIX = 'sets.outrigger.dev';
/** Pod label: the revision of the set the pod was injected with. */
export const setRevisionLabel = (set: string): string => `${set}.${SETS_PREFIX}/revision`;
/** Pod annotation: what the set added (containers, init containers, volumes). */
export const setStatusAnnotation = (set: string): string => `${set}.${SETS_PREFIX}/status`;
/**
 * Namespace annotation, pod label or pod annotation: `disabled` opts out of this set alone (the
 * proxy's is `proxy.sets.outrigger.dev/inject`); INJECT still opts out of every set.
 */
export const setInjectKey = (set: string): string => `${set}.${SETS_PREFIX}/inject`;

/**
 * The names one wave reads and writes: the proxy's are the ones above; a sidecar set's are the
 * same names under `<set>.sets.outrigger.dev/`, so each set's revision, restarts, canaries,
 * rollback and wave record are its own, and a change to one never reads or moves another's.
 */
export interface WaveKeys {
  /** The set's name (`proxy` for the default set). */
  set: string;
  /** Template annotation: the revision new pods get. */
  configRevision: string;
  /** Pod label: the revision a pod was injected with. */
  podRevision: string;
  restartedRevision: string;
  restartedAt: string;
  /** A workload label (see COMPLETED_REVISION). */
  completedRevision: string;
  healedRevision: string;
  healedAt: string;
  canaryRevision: string;
  rolledBackFrom: string;
  forcedRollback: string;
  /** ConfigMap annotations: the set's wave. */
  waveStopped: string;
  waveStage: string;
  lastGood: string;
  resume: string;
  resumedAt: string;
}

export const PROXY_KEYS: WaveKeys = Object.freeze({
  set: 'proxy',
  configRevision: CONFIG_REVISION,
  podRevision: REVISION,
  restartedRevision: RESTARTED_REVISION,
  restartedAt: RESTARTED_AT,
  completedRevision: COMPLETED_REVISION,
  healedRevision: HEALED_REVISION,
  healedAt: HEALED_AT,
  canaryRevision: CANARY_REVISION,
  rolledBackFrom: ROLLED_BACK_FROM,
  forcedRollback: FORCED_ROLLBACK,
  waveStopped: WAVE_STOPPED,
  waveStage: WAVE_STAGE,
  lastGood: LAST_GOOD_REVISION,
  resume: RESUME,
  resumedAt: RESUMED_AT,
});

const setKeysCache = new Map<string, WaveKeys>();

/** A sidecar set's wave names: the proxy's under `<set>.sets.outrigger.dev/`. */
export function setWaveKeys(set: string): WaveKeys {
  let keys = setKeysCache.get(set);
  if (keys) return keys;
  const under = (name: string): string => `${set}.${SETS_PREFIX}/${name.slice(PREFIX.length + 1)}`;
  const entries = Object.entries(PROXY_KEYS as unknown as Record<string, string>).map(([k, v]) => [
    k,
    k === 'set' ? set : under(v),
  ]);
  keys = Object.freeze(Object.fromEntries(entries) as unknown as WaveKeys);
  // Set names are bounded by the configuration (MAX_SETS); a cache of every name ever seen is
  // bounded by the configurations a process reads, which a long life keeps small anyway.
  if (setKeysCache.size < 1024) setKeysCache.set(set, keys);
  return keys;
}

/** Whether a ConfigMap annotation is a wave's stage record or last good revision (the proxy's or a set's). */
export const isOwnWaveRecord = (key: string): boolean =>
  key === WAVE_STAGE ||
  key === LAST_GOOD_REVISION ||
  ((key.endsWith('/wave-stage') || key.endsWith('/last-good-revision')) &&
    key.includes(`.${SETS_PREFIX}/`));

/** Whether a template annotation is a sidecar set's stamp (`<set>.sets.outrigger.dev/config-revision`). */
export const isSetStampKey = (key: string): boolean =>
  key.endsWith(`.${SETS_PREFIX}/config-revision`);

/** The set a stamp key names, or undefined for a key that is no set's stamp. */
export const setOfStampKey = (key: string): string | undefined =>
  isSetStampKey(key) ? key.slice(0, -`.${SETS_PREFIX}/config-revision`.length) : undefined;

/** The target of an owner that should run no sidecar; no revision hash looks like it. */
export const NO_REVISION = 'none';

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
/** The webhook's CA (ca.crt, ca.key), self-managed mode only: read by the controller alone. */
export const CA_SECRET_NAME = 'outrigger-webhook-ca';
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
