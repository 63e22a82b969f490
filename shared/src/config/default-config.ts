// The default injector configuration, as the documented YAML that `outrigger config default`
// prints and the install ships. A test keeps it equal to the parser's defaults.

export const DEFAULT_CONFIG_YAML = `# Outrigger injector configuration (ConfigMap outrigger-system/outrigger-config, key config.yaml).
# Every field is optional; absent fields take the values shown here. See docs/configuration.md.

# The proxy sidecar.
proxy:
  name: outrigger-proxy
  image: ghcr.io/outrigger/proxy:1.0.0
  imagePullPolicy: IfNotPresent
  ports:
    inbound: 4143   # redirected inbound traffic arrives here
    outbound: 4140  # redirected outbound traffic arrives here
    admin: 4191     # health, readiness and metrics; never redirected
  uid: 2102         # the proxy's user id; its own traffic is not redirected
  args: []
  env: []           # extra environment variables, as in a container spec
  logLevel: info    # trace, debug, info, warn or error
  resources:
    requests:
      cpu: 100m
      memory: 64Mi
    limits:
      memory: 256Mi
  readinessProbe:
    httpGet:
      path: /ready
      port: 4191
    initialDelaySeconds: 2
    periodSeconds: 10
  livenessProbe:
    httpGet:
      path: /live
      port: 4191
    initialDelaySeconds: 10
    periodSeconds: 10
  securityContext:
    runAsNonRoot: true
    readOnlyRootFilesystem: true
    allowPrivilegeEscalation: false
    capabilities:
      drop: [ALL]
    seccompProfile:
      type: RuntimeDefault

# The init container that redirects the pod's traffic through the proxy.
# Set enabled: false where a CNI plugin does the redirection instead.
init:
  enabled: true
  name: outrigger-init
  image: ghcr.io/outrigger/proxy-init:1.0.0
  imagePullPolicy: IfNotPresent
  args: []
  resources:
    requests:
      cpu: 10m
      memory: 10Mi
    limits:
      cpu: 100m
      memory: 32Mi
  securityContext:
    runAsUser: 0
    runAsNonRoot: false
    readOnlyRootFilesystem: true
    allowPrivilegeEscalation: false
    capabilities:
      add: [NET_ADMIN, NET_RAW]
      drop: [ALL]
  skipInboundPorts: []    # ports or ranges such as "9000-9100" that bypass the proxy
  skipOutboundPorts: []

# Native sidecar (an init container with restartPolicy: Always, Kubernetes 1.29+):
# auto uses it where the cluster supports it; true always; false never (classic sidecar).
nativeSidecar: auto

# Namespaces never injected, beside kube-system, kube-public, kube-node-lease and Outrigger's own.
excludeNamespaces: []

# The config.outrigger.dev/<setting> annotations users may set on namespaces, templates and pods.
overrides:
  allowed:
    - proxy-cpu-request
    - proxy-cpu-limit
    - proxy-memory-request
    - proxy-memory-limit
    - proxy-log-level
    - proxy-image
    - skip-inbound-ports
    - skip-outbound-ports
    - native-sidecar
    - init-container
  # Image prefixes a proxy-image override may name.
  allowedRegistries:
    - ghcr.io/outrigger/

# How the controller rolls a new configuration out. Not part of the revision.
rollout:
  mode: auto                    # auto, manual (report only) or dry-run
  maxConcurrent: 5              # owners rolling at once, cluster-wide
  progressDeadlineSeconds: 600  # a rollout not complete by then stops the wave
  restartOnOptOut: false        # restart owners that opted out but still run sidecars
  healEscapedPods: true         # restart owners of pods that escaped injection
  healBackoffSeconds: 300
  onFailure: rollback           # a failed health gate also rolls the restarted owners back (or: stop)
  forceRollback: true           # then delete a StatefulSet's pods stuck not Ready on the failed revision
  canary:                       # the first owners of a wave, which must pass the gate before the rest
    count: 1                    # 0 skips the canary stage
    soakSeconds: 120            # how long the canaries must stay healthy
    # namespaceSelector: {matchLabels: {tier: canary}}
    # ownerSelector: {matchLabels: {outrigger.dev/canary: "true"}}
  history: 10                   # accepted configurations kept for pinned pods (2 to 50)
  windows: []                   # when restarts may start; empty: any time. For example:
  # - {days: [Sat, Sun], start: "01:00", end: "05:00", timeZone: Europe/Berlin}

# Sidecar sets beside the proxy (the proxy and init above are the default set, "proxy"), each
# with its own selectors and place in the pod; each has a revision of its own.
sets: []
  # - name: log-shipper
  #   order: 100                # applied by order, then name; the proxy's is 0
  #   position: before-app      # or after-app
  #   podSelector: {matchLabels: {logs: "on"}}
  #   containers: [{name: shipper, image: ghcr.io/acme/shipper:1.0}]
  #   volumes: [{name: app-logs, emptyDir: {}}]
`;
