#!/usr/bin/env bash
# Start a local Kubernetes control plane on 127.0.0.1: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler and kwok (playing the kubelets of
# ${OUTRIGGER_NODES:-3} fake nodes), and, where this machine can run one, a real
# node (containerd, kubelet, kube-proxy, CoreDNS: node.sh, OUTRIGGER_REAL_NODE).
# Binaries come from build.sh's cache, images from images.sh's.
#
# Progress goes to stderr; the only stdout line is the admin kubeconfig path.
# Env: OUTRIGGER_CACHE, OUTRIGGER_CLUSTER_DIR (state, default <cache>/cluster),
#      OUTRIGGER_{ETCD,ETCD_PEER,APISERVER,KCM,SCHEDULER,KWOK}_PORT,
#      OUTRIGGER_NODES (default 3), OUTRIGGER_UP_TIMEOUT (seconds, default 60),
#      OUTRIGGER_ADVERTISE_ADDRESS (kube-apiserver --advertise-address; default:
#      the host's default-route IP, which only names the `kubernetes` Service
#      endpoint: nothing connects to it, the server listens on 127.0.0.1 only),
#      KUBECTL (default: <cache>/bin/kubectl-<version> if built, else kubectl).
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

need() { command -v "$1" >/dev/null 2>&1 || die "$1 is required but not found on PATH${2:+ ($2)}"; }
need openssl
need curl
need setsid "util-linux"
need flock "util-linux"
need "${KUBECTL}" "set KUBECTL=/path/to/kubectl"
lock_cluster

TIMEOUT="${OUTRIGGER_UP_TIMEOUT:-60}"
START=${SECONDS}
DEADLINE=$((START + TIMEOUT))

bin() { # component -> cached binary path (must exist)
  local version
  case "$1" in
    etcd) version="${ETCD_VERSION}" ;;
    kwok) version="${KWOK_VERSION}" ;;
    *) version="${KUBERNETES_VERSION}" ;;
  esac
  local b="${BIN_DIR}/$1-${version}"
  [[ -x "${b}" ]] || die "${b} not found: run e2e/cluster/build.sh (make cluster-build) first"
  printf '%s\n' "${b}"
}

kc() { "${KUBECTL}" --kubeconfig="${ADMIN_KUBECONFIG}" "$@"; }

# ------------------------------------------------------------- already up?
if [[ -d "${STATE_DIR}" ]]; then
  all_alive=1
  for c in "${COMPONENTS[@]}"; do ours "$(pid_of "${c}" || true)" || all_alive=0; done
  if ((all_alive)) && [[ -s "${ADMIN_KUBECONFIG}" ]] && admin_curl /readyz >/dev/null 2>&1; then
    log "cluster is already up (state ${STATE_DIR}); nothing to do"
    printf '%s\n' "${ADMIN_KUBECONFIG}"
    exit 0
  fi
  log "found stale or partial cluster state in ${STATE_DIR}: cleaning it up first"
  stop_all
  node_cleanup || die "the real node of the earlier cluster left the machine changed (above); fix that first"
  remove_state
  COMPONENTS=("${CONTROL_PLANE[@]}")
fi

for b in "${CONTROL_PLANE[@]}"; do bin "${b}" >/dev/null; done
KWOK_STAGES="${SHARE_DIR}/kwok-${KWOK_VERSION}/stages.yaml"
[[ -s "${KWOK_STAGES}" ]] || die "${KWOK_STAGES} not found: run e2e/cluster/build.sh first"

REAL_NODE=0
if choose_real_node; then REAL_NODE=1; fi

PORTS=("${ETCD_PORT}" "${ETCD_PEER_PORT}" "${APISERVER_PORT}" "${KCM_PORT}" "${SCHEDULER_PORT}" "${KWOK_PORT}")
if ((REAL_NODE)); then
  PORTS+=("${KUBELET_PORT}" "${KUBELET_HEALTHZ_PORT}" "${KUBE_PROXY_HEALTHZ_PORT}" "${KUBE_PROXY_METRICS_PORT}")
fi
for p in "${PORTS[@]}"; do
  if (exec 3<>"/dev/tcp/127.0.0.1/${p}") 2>/dev/null; then
    die "port 127.0.0.1:${p} is already in use (set OUTRIGGER_*_PORT to move it)"
  fi
done

mkdir -p "${STATE_DIR}"
printf 'outrigger local cluster state, removed by e2e/cluster/down.sh\n' >"${STATE_DIR}/${STATE_MARKER}"
mkdir -p "${PKI_DIR}" "${RUN_DIR}" "${LOG_DIR}" "${STATE_DIR}/etcd"
chmod 700 "${STATE_DIR}" "${PKI_DIR}" "${STATE_DIR}/etcd"

# On failure: show why, stop what was started, keep the logs.
fail() {
  local msg="$1" c
  printf '[cluster] ERROR: %s\n' "${msg}" >&2
  for c in "${COMPONENTS[@]}"; do
    [[ -s "${LOG_DIR}/${c}.log" ]] || continue
    printf '[cluster] ---- last lines of %s ----\n' "${LOG_DIR}/${c}.log" >&2
    tail -n 15 "${LOG_DIR}/${c}.log" >&2 || true
  done
  stop_all
  node_cleanup || true
  printf '[cluster] processes stopped; logs kept in %s (make cluster-down removes them)\n' "${LOG_DIR}" >&2
  exit 1
}
trap 'fail "up.sh interrupted"' INT TERM

# -------------------------------------------------------------------- PKI
log "generating certificates in ${PKI_DIR}"
(
  cd "${PKI_DIR}"
  umask 077
  eckey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
  eckey ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 3650 -subj "/CN=outrigger-local-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" -out ca.crt 2>/dev/null
  # leaf NAME SUBJECT EXTENSIONS
  leaf() {
    eckey "$1.key"
    openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
    printf '%b' "$3" >"$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -sha256 \
      -days 3650 -extfile "$1.ext" -out "$1.crt" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
  }
  client='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n'
  server_sans="DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:127.0.0.1,IP:10.96.0.1,IP:${NODE_IP}"
  leaf apiserver "/CN=kube-apiserver" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${server_sans}\n"
  leaf admin "/O=system:masters/CN=outrigger-admin" "${client}"
  leaf kube-controller-manager "/CN=system:kube-controller-manager" "${client}"
  leaf kube-scheduler "/CN=system:kube-scheduler" "${client}"
  leaf kwok "/O=system:masters/CN=kwok-controller" "${client}"
  leaf front-proxy-client "/CN=front-proxy-client" "${client}"
  if ((REAL_NODE)); then node_pki; fi
  # ServiceAccount token signing key (RS256, as kubeadm does).
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
  openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
) || fail "certificate generation failed"

b64() { base64 -w0 <"$1"; }
write_kubeconfig() { # file user
  local f="$1" u="$2"
  (
    umask 077
    cat >"${f}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: outrigger
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority-data: $(b64 "${PKI_DIR}/ca.crt")
users:
- name: ${u}
  user:
    client-certificate-data: $(b64 "${PKI_DIR}/${u}.crt")
    client-key-data: $(b64 "${PKI_DIR}/${u}.key")
contexts:
- name: outrigger
  context:
    cluster: outrigger
    user: ${u}
current-context: outrigger
EOF
  )
}
write_kubeconfig "${ADMIN_KUBECONFIG}" admin
for c in kube-controller-manager kube-scheduler kwok; do
  write_kubeconfig "${STATE_DIR}/${c}.kubeconfig" "${c}"
done
if ((REAL_NODE)); then
  for c in kubelet kube-proxy; do write_kubeconfig "${STATE_DIR}/${c}.kubeconfig" "${c}"; done
  # Before anything listens beyond 127.0.0.1: record the machine, guard it, make the bridge.
  node_prepare || fail "preparing the real node failed"
fi

# kwok configuration: the node/pod lifecycle stages shipped with kwok
# (node-initialize, node-heartbeat-with-lease, pod-ready/complete/delete).
cp "${KWOK_STAGES}" "${STATE_DIR}/kwok.yaml"

# ---------------------------------------------------------------- process start
check_alive() { # fail early if a component died
  local c
  for c in "$@"; do
    alive "$(pid_of "${c}" || true)" || fail "${c} exited (see ${LOG_DIR}/${c}.log)"
  done
}

wait_for() { # description component-list... -- command...
  local what="$1"; shift
  local comps=()
  while [[ "$1" != "--" ]]; do comps+=("$1"); shift; done
  shift
  until "$@" >/dev/null 2>&1; do
    check_alive "${comps[@]}"
    ((SECONDS < DEADLINE)) || fail "timed out after ${TIMEOUT}s waiting for ${what}"
    sleep 0.25
  done
  log "${what}: ok ($((SECONDS - START))s)"
}

log "starting etcd ${ETCD_VERSION} on 127.0.0.1:${ETCD_PORT}"
start etcd "$(bin etcd)" \
  --name=outrigger \
  --data-dir="${STATE_DIR}/etcd" \
  --listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
  --listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster="outrigger=http://127.0.0.1:${ETCD_PEER_PORT}" \
  --initial-cluster-state=new \
  --unsafe-no-fsync=true \
  --quota-backend-bytes=4294967296 \
  --log-level=warn
wait_for "etcd health" etcd -- curl -sf --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health"

# With a real node, pods reach the API server on the bridge (the `kubernetes` Service's
# endpoint is the node's address there); the guard chain rejects the port from outside.
APISERVER_NODE_FLAGS=()
if ((REAL_NODE)); then
  APISERVER_NODE_FLAGS=(--bind-address=0.0.0.0 --advertise-address="${NODE_IP}"
    --kubelet-client-certificate="${PKI_DIR}/apiserver-kubelet-client.crt"
    --kubelet-client-key="${PKI_DIR}/apiserver-kubelet-client.key"
    --kubelet-certificate-authority="${PKI_DIR}/ca.crt"
    --kubelet-preferred-address-types=InternalIP)
else
  APISERVER_NODE_FLAGS=(--bind-address=127.0.0.1
    ${OUTRIGGER_ADVERTISE_ADDRESS:+"--advertise-address=${OUTRIGGER_ADVERTISE_ADDRESS}"})
fi
log "starting kube-apiserver ${KUBERNETES_VERSION} on https://127.0.0.1:${APISERVER_PORT}"
start kube-apiserver "$(bin kube-apiserver)" \
  "${APISERVER_NODE_FLAGS[@]}" \
  --secure-port="${APISERVER_PORT}" \
  --etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
  --tls-cert-file="${PKI_DIR}/apiserver.crt" \
  --tls-private-key-file="${PKI_DIR}/apiserver.key" \
  --client-ca-file="${PKI_DIR}/ca.crt" \
  --authorization-mode=Node,RBAC \
  --anonymous-auth=true \
  --enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,DefaultTolerationSeconds,NodeRestriction,PodSecurity,PodNodeSelector,PodTolerationRestriction,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota \
  --feature-gates=MutatingAdmissionPolicy=true \
  --runtime-config=admissionregistration.k8s.io/v1beta1=true \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --service-account-key-file="${PKI_DIR}/sa.pub" \
  --service-account-signing-key-file="${PKI_DIR}/sa.key" \
  --api-audiences=https://kubernetes.default.svc.cluster.local \
  --service-cluster-ip-range=10.96.0.0/16 \
  --allow-privileged=true \
  --proxy-client-cert-file="${PKI_DIR}/front-proxy-client.crt" \
  --proxy-client-key-file="${PKI_DIR}/front-proxy-client.key" \
  --requestheader-client-ca-file="${PKI_DIR}/ca.crt" \
  --requestheader-allowed-names=front-proxy-client \
  --requestheader-extra-headers-prefix=X-Remote-Extra- \
  --requestheader-group-headers=X-Remote-Group \
  --requestheader-username-headers=X-Remote-User \
  --cert-dir="${PKI_DIR}/apiserver-certs" \
  --shutdown-watch-termination-grace-period=2s \
  --profiling=false
wait_for "kube-apiserver /readyz" etcd kube-apiserver -- admin_curl /readyz

log "starting kube-controller-manager, kube-scheduler and kwok ${KWOK_VERSION}"
start kube-controller-manager "$(bin kube-controller-manager)" \
  --kubeconfig="${STATE_DIR}/kube-controller-manager.kubeconfig" \
  --authentication-kubeconfig="${STATE_DIR}/kube-controller-manager.kubeconfig" \
  --authorization-kubeconfig="${STATE_DIR}/kube-controller-manager.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${KCM_PORT}" \
  --cert-dir="${PKI_DIR}/kube-controller-manager-certs" \
  --controllers='*' \
  --use-service-account-credentials=true \
  --service-account-private-key-file="${PKI_DIR}/sa.key" \
  --root-ca-file="${PKI_DIR}/ca.crt" \
  --cluster-signing-cert-file="${PKI_DIR}/ca.crt" \
  --cluster-signing-key-file="${PKI_DIR}/ca.key" \
  --service-cluster-ip-range=10.96.0.0/16 \
  --leader-elect=false \
  --kube-api-qps=100 \
  --kube-api-burst=200 \
  --node-monitor-grace-period=5m \
  --profiling=false
start kube-scheduler "$(bin kube-scheduler)" \
  --kubeconfig="${STATE_DIR}/kube-scheduler.kubeconfig" \
  --authentication-kubeconfig="${STATE_DIR}/kube-scheduler.kubeconfig" \
  --authorization-kubeconfig="${STATE_DIR}/kube-scheduler.kubeconfig" \
  --bind-address=127.0.0.1 \
  --secure-port="${SCHEDULER_PORT}" \
  --cert-dir="${PKI_DIR}/kube-scheduler-certs" \
  --leader-elect=false \
  --profiling=false
start kwok "$(bin kwok)" \
  --kubeconfig="${STATE_DIR}/kwok.kubeconfig" \
  --config="${STATE_DIR}/kwok.yaml" \
  --manage-all-nodes=false \
  --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
  --node-ip=127.0.0.1 \
  --node-port="${KWOK_PORT}" \
  --server-address="127.0.0.1:${KWOK_PORT}" \
  --tls-cert-file="${PKI_DIR}/apiserver.crt" \
  --tls-private-key-file="${PKI_DIR}/apiserver.key" \
  --cidr=10.244.0.0/16 \
  --node-lease-duration-seconds=40

# ------------------------------------------------------------------ fake nodes
nodes_yaml() {
  local i
  for ((i = 0; i < NODE_COUNT; i++)); do
    cat <<EOF
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-${i}
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: kwok-node-${i}
    type: kwok
status:
  allocatable: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
  capacity: {cpu: "32", memory: 256Gi, pods: "110", ephemeral-storage: 1Ti}
  nodeInfo:
    architecture: amd64
    operatingSystem: linux
    kubeletVersion: ${KUBERNETES_VERSION}
    kubeProxyVersion: ${KUBERNETES_VERSION}
EOF
  done
}
nodes_yaml | kc create -f - >/dev/null || fail "creating the fake nodes failed"
log "created ${NODE_COUNT} fake nodes (kwok-node-0..$((NODE_COUNT - 1)))"

nodes_ready() {
  local ready
  ready="$(kc get nodes -l type=kwok -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c '^True$')" || return 1
  [[ "${ready}" -ge "${NODE_COUNT}" ]]
}
wait_for "${NODE_COUNT} nodes Ready" "${COMPONENTS[@]}" -- nodes_ready
# Pods can only be admitted once the ServiceAccount controller made the default SA.
wait_for "default ServiceAccount" "${COMPONENTS[@]}" -- kc -n default get serviceaccount default
wait_for "kube-controller-manager /healthz" kube-controller-manager -- \
  curl -skf --max-time 2 "https://127.0.0.1:${KCM_PORT}/healthz"
wait_for "kube-scheduler /healthz" kube-scheduler -- \
  curl -skf --max-time 2 "https://127.0.0.1:${SCHEDULER_PORT}/healthz"

if ((REAL_NODE)); then node_start; fi

trap - INT TERM
log "cluster up in $((SECONDS - START))s: Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, kwok ${KWOK_VERSION}, ${NODE_COUNT} nodes"
log "logs: ${LOG_DIR}/   stop: make cluster-down (e2e/cluster/down.sh)"
log "admin kubeconfig: export KUBECONFIG=${ADMIN_KUBECONFIG}"
printf '%s\n' "${ADMIN_KUBECONFIG}"
