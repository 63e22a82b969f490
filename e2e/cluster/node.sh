# The real node of the local cluster: containerd, the kubelet and kube-proxy running real
# containers beside kwok's fake nodes. Sourced by up.sh and down.sh after lib.sh; not executed.
# shellcheck shell=bash disable=SC2034  # variables are used by the scripts sourcing this
#
# Everything it starts keeps its files under ${NODE_DIR} (inside the cluster's state folder).
# What it must change outside (sysctls the kubelet and the bridge plugin set, iptables chains,
# cgroups, a bridge, mounts, a few hard-coded paths) is recorded by host-state.sh before and
# put back by node_cleanup, which then compares the machine with the record.
#
# Env: OUTRIGGER_REAL_NODE = auto (default: a real node when this machine can run one, else
#      kwok only, saying why in one line) | 1 (required: fail if it cannot) | 0 (kwok only);
#      OUTRIGGER_KUBELET_PORT (26250), OUTRIGGER_KUBELET_HEALTHZ_PORT (26248),
#      OUTRIGGER_KUBE_PROXY_HEALTHZ_PORT (26256), OUTRIGGER_KUBE_PROXY_METRICS_PORT (26249).

REAL_NODE_MODE="${OUTRIGGER_REAL_NODE:-auto}"
REAL_NODE_NAME="outrigger-node"
# The node's taint: only pods that tolerate it run for real. A namespace opts its pods in with
# the two annotations below (the API server's PodTolerationRestriction and PodNodeSelector
# admission plugins add the toleration and the node selector to every pod in it).
REAL_NODE_TAINT_KEY="outrigger.dev/real-node"
REAL_NODE_LABEL="outrigger.dev/node=real"
NODE_DIR="${STATE_DIR}/node"
NODE_BRIDGE="outrigger0"
NODE_IP="10.245.0.1"
POD_CIDR="10.245.0.0/24"
SERVICE_CIDR="10.96.0.0/16"
DNS_IP="10.96.0.10"
FAKE_POD_CIDR="10.244.0.0/16"
KUBELET_PORT="${OUTRIGGER_KUBELET_PORT:-26250}"
KUBELET_HEALTHZ_PORT="${OUTRIGGER_KUBELET_HEALTHZ_PORT:-26248}"
KUBE_PROXY_HEALTHZ_PORT="${OUTRIGGER_KUBE_PROXY_HEALTHZ_PORT:-26256}"
KUBE_PROXY_METRICS_PORT="${OUTRIGGER_KUBE_PROXY_METRICS_PORT:-26249}"
CONTAINERD_SOCK="${NODE_DIR}/containerd/containerd.sock"
GUARD_CHAIN="OUTRIGGER-GUARD"
# The host snapshot outlives the state folder, so down.sh can compare after removing it.
HOST_BEFORE="${OUTRIGGER_CACHE}/host-state/$(printf '%s' "${STATE_DIR}" | cksum | cut -d' ' -f1).before"
IMAGES_INDEX="${OUTRIGGER_CACHE}/images/index"
# Sysctls the kubelet (kernel tunables), the bridge plugin (forwarding) and kube-proxy set.
NODE_SYSCTLS=(kernel.panic kernel.panic_on_oops vm.overcommit_memory vm.panic_on_oom
  kernel.keys.root_maxkeys kernel.keys.root_maxbytes net.ipv4.ip_forward
  net.ipv4.conf.all.forwarding net.ipv6.conf.all.forwarding net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
  net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_tcp_timeout_established
  net.netfilter.nf_conntrack_tcp_timeout_close_wait)

real_node_on() { [[ -e "${NODE_DIR}/.on" ]]; }

# Why this machine cannot run the real node, or nothing when it can.
real_node_obstacle() {
  [[ "$(uname -s)" == Linux ]] || { echo "not Linux"; return; }
  [[ "$(id -u)" == 0 ]] || { echo "not root (the kubelet, containerd and the bridge need root)"; return; }
  local c
  for c in containerd containerd-shim-runc-v2 ctr runc iptables iptables-save iptables-restore ip conntrack; do
    command -v "${c}" >/dev/null 2>&1 || { echo "${c} is not installed (make setup installs it on Debian)"; return; }
  done
  for c in bridge host-local loopback; do
    [[ -x "/usr/lib/cni/${c}" ]] || { echo "/usr/lib/cni/${c} is missing (Debian package containernetworking-plugins)"; return; }
  done
  for c in kubelet kube-proxy; do
    [[ -x "${BIN_DIR}/${c}-${KUBERNETES_VERSION}" ]] || { echo "${c} is not built (make cluster-build)"; return; }
  done
  [[ -s "${IMAGES_INDEX}" ]] || { echo "the images are not built (make images)"; return; }
  [[ -w /sys/fs/cgroup/pids ]] || [[ -w /sys/fs/cgroup/cgroup.procs ]] || { echo "cgroups are not writable"; return; }
  if ip link show "${NODE_BRIDGE}" >/dev/null 2>&1; then
    echo "bridge ${NODE_BRIDGE} exists: another local cluster on this machine has the real node"
    return
  fi
  return 0
}

# Decides, before anything starts, whether this cluster gets the real node.
choose_real_node() {
  case "${REAL_NODE_MODE}" in
    0 | off | false) log "real node: off (OUTRIGGER_REAL_NODE=${REAL_NODE_MODE}); kwok nodes only"; return 1 ;;
  esac
  local why
  why="$(real_node_obstacle)"
  if [[ -n "${why}" ]]; then
    case "${REAL_NODE_MODE}" in
      1 | on | true) die "OUTRIGGER_REAL_NODE=${REAL_NODE_MODE} but this machine cannot run a real node: ${why}" ;;
    esac
    log "real node: off, ${why}; kwok nodes only (OUTRIGGER_REAL_NODE=1 makes this an error)"
    return 1
  fi
  return 0
}

# The interfaces that lead off the machine (those of the default routes).
outside_interfaces() { ip -o route show default 2>/dev/null | sed -n 's/.* dev \([^ ]*\).*/\1/p' | sort -u; }

# Before anything listens beyond 127.0.0.1: nothing from outside reaches the cluster's ports,
# and no packet for the Service or pod ranges leaves by the default route (where this
# machine's egress proxy would answer it) while kube-proxy is not (yet) translating them.
guard_up() {
  iptables -N "${GUARD_CHAIN}"
  local ext
  # In OUTPUT the out interface is the one routed before kube-proxy's DNAT: a packet to a
  # Service that was translated to a pod still shows the default route's interface there, so
  # only packets that were not translated are judged by it.
  local cidr
  for ext in $(outside_interfaces); do
    for cidr in "${SERVICE_CIDR}" "${POD_CIDR}" "${FAKE_POD_CIDR}"; do
      iptables -A "${GUARD_CHAIN}" -o "${ext}" -d "${cidr}" -m conntrack ! --ctstate DNAT -j REJECT
    done
    iptables -A "${GUARD_CHAIN}" -i "${ext}" -p tcp -m multiport \
      --dports "${APISERVER_PORT},${KUBELET_PORT}" -j REJECT
  done
  local hook
  for hook in INPUT OUTPUT FORWARD; do iptables -I "${hook}" 1 -j "${GUARD_CHAIN}"; done
}

bridge_up() {
  ip link add "${NODE_BRIDGE}" type bridge
  ip addr add "${NODE_IP}/24" dev "${NODE_BRIDGE}"
  ip link set "${NODE_BRIDGE}" up
}

# Called by up.sh before the API server starts: record the machine, then guard and bridge.
node_prepare() {
  mkdir -p "${NODE_DIR}" "${HOST_BEFORE%/*}"
  bash "${CLUSTER_HERE}/host-state.sh" >"${HOST_BEFORE}"
  touch "${NODE_DIR}/.on"
  guard_up
  bridge_up
  log "real node: host state recorded (${HOST_BEFORE}); guard chain ${GUARD_CHAIN} and bridge ${NODE_BRIDGE} (${NODE_IP}) up"
}

node_pki() { # run inside PKI_DIR by up.sh's certificate step, with its leaf() helper
  local client='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n'
  leaf kubelet "/O=system:nodes/CN=system:node:${REAL_NODE_NAME}" "${client}"
  leaf kubelet-serving "/CN=${REAL_NODE_NAME}" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:${REAL_NODE_NAME},IP:${NODE_IP}\n"
  leaf kube-proxy "/CN=system:kube-proxy" "${client}"
  leaf apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "${client}"
}

write_containerd_config() {
  local pause
  pause="$(image_ref pause)"
  mkdir -p "${NODE_DIR}/containerd" "${NODE_DIR}/cni/net.d" "${NODE_DIR}/cni/ipam"
  cat >"${NODE_DIR}/containerd/config.toml" <<EOF
# Generated by e2e/cluster/node.sh: containerd for the local cluster's real node.
version = 2
root = "${NODE_DIR}/containerd/root"
state = "${NODE_DIR}/containerd/state"
plugin_dir = ""
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "${CONTAINERD_SOCK}"
[ttrpc]
  address = "${CONTAINERD_SOCK}.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.internal.v1.opt"]
  path = "${NODE_DIR}/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${pause}"
  # root here may not lower a process's oom_score_adj (no CAP_SYS_RESOURCE): keep runc from trying
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${NODE_DIR}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = ""
EOF
  # One bridge, addresses from host-local IPAM with its state under the node's folder, no
  # masquerade: pods talk to each other and to the host, never past it.
  cat >"${NODE_DIR}/cni/net.d/10-outrigger.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "outrigger",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${NODE_BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${NODE_DIR}/cni/ipam",
        "ranges": [[{"subnet": "${POD_CIDR}", "rangeStart": "${POD_CIDR%.*/*}.10", "gateway": "${NODE_IP}"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    }
  ]
}
EOF
}

# The images index (images.sh): one "<archive> <reference>" line per image, the archive in the
# index's folder; an image's name is its reference's last path element (pause, demo-proxy,
# outrigger, coredns).
image_ref() { # name -> reference from the images index
  awk -v n="$1" '{r = $2; sub(/:[^:\/]*$/, "", r); sub(/.*\//, "", r)} r == n {ref = $2} END {print ref}' "${IMAGES_INDEX}"
}

# The log shipper's second name (e2e/src/in-cluster.ts names it too: SHIPPER_NEXT_IMAGE).
SHIPPER_NEXT_REF="localhost/outrigger/log-shipper:1.1"

node_ctr() { ctr --address "${CONTAINERD_SOCK}" -n k8s.io "$@"; }

import_images() { # [name...]: only these images (default: every one in the index)
  local archive ref name n=0
  while read -r archive ref; do
    [[ -n "${archive}" && "${archive}" != \#* ]] || continue
    name="${ref%:*}"; name="${name##*/}"
    if (($# > 0)) && [[ " $* " != *" ${name} "* ]]; then continue; fi
    [[ "${archive}" == /* ]] || archive="${IMAGES_INDEX%/*}/${archive}"
    [[ -s "${archive}" ]] || fail "image archive ${archive} (${ref}) is missing: run make images"
    node_ctr images import "${archive}" >/dev/null || fail "importing ${archive} into the node's containerd failed"
    n=$((n + 1))
  done <"${IMAGES_INDEX}"
  # The node has no registry: the demo proxy also answers to the default proxy and proxy-init
  # images (the configuration's defaults and the chart's values), so an install with the
  # chart's defaults injects a sidecar that really starts.
  local repo="${CLUSTER_HERE}/../.." default_proxy
  default_proxy="$(grep -ohE 'image: [^ ]*/proxy(-init)?:[^ ]*' "${repo}/manifests/chart/values.yaml" \
    "${repo}/shared/src/config/default-config.ts" | awk '{print $2}' | sort -u | tr '\n' ' ')"
  local alias
  for alias in ${default_proxy}; do
    node_ctr images tag --force "$(image_ref demo-proxy)" "${alias}" >/dev/null ||
      fail "tagging the demo proxy as ${alias} failed"
  done
  # The log shipper also answers to a second tag, so a test can change a sidecar set's image
  # with nothing to pull (the sidecar-set waves suite).
  if [[ -n "$(image_ref log-shipper)" ]]; then
    node_ctr images tag --force "$(image_ref log-shipper)" "${SHIPPER_NEXT_REF}" >/dev/null ||
      fail "tagging the log shipper as ${SHIPPER_NEXT_REF} failed"
  fi
  # and the pause image to the name the tests' workloads (and outrigger check) use
  node_ctr images tag --force "$(image_ref pause)" registry.k8s.io/pause:3.10 >/dev/null ||
    fail "tagging the pause image failed"
  log "real node: ${n} images imported from ${IMAGES_INDEX}; the demo proxy is also ${default_proxy}"
}

write_kubelet_config() {
  cat >"${NODE_DIR}/kubelet.yaml" <<EOF
# Generated by e2e/cluster/node.sh
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP}
port: ${KUBELET_PORT}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${KUBELET_HEALTHZ_PORT}
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: ${PKI_DIR}/ca.crt}
authorization: {mode: Webhook}
tlsCertFile: ${PKI_DIR}/kubelet-serving.crt
tlsPrivateKeyFile: ${PKI_DIR}/kubelet-serving.key
cgroupDriver: cgroupfs
failCgroupV1: false
containerRuntimeEndpoint: unix://${CONTAINERD_SOCK}
podLogsDir: ${NODE_DIR}/pod-logs
clusterDomain: cluster.local
clusterDNS: [${DNS_IP}]
resolvConf: /etc/resolv.conf
failSwapOn: false
maxPods: 40
serializeImagePulls: false
registerWithTaints:
- {key: ${REAL_NODE_TAINT_KEY}, value: "true", effect: NoSchedule}
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusReportFrequency: 10s
shutdownGracePeriod: 0s
EOF
  cat >"${NODE_DIR}/kube-proxy.yaml" <<EOF
# Generated by e2e/cluster/node.sh
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: ${STATE_DIR}/kube-proxy.kubeconfig}
hostnameOverride: ${REAL_NODE_NAME}
mode: iptables
bindAddress: ${NODE_IP}
healthzBindAddress: 127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}
metricsBindAddress: 127.0.0.1:${KUBE_PROXY_METRICS_PORT}
clusterCIDR: ${POD_CIDR}
nodePortAddresses: ["${NODE_IP}/32"]
# leave the machine's conntrack table and timeouts as they are
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false, masqueradeAll: false, syncPeriod: 30s, minSyncPeriod: 1s}
EOF
}

node_ready() {
  [[ "$(kc get node "${REAL_NODE_NAME}" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" == True ]]
}

# Called by up.sh once the API server answers: containerd, the kubelet, kube-proxy.
node_start() {
  # from now on the node's processes are checked, and their logs shown on failure, with the rest
  COMPONENTS+=("${NODE_COMPONENTS[@]}")
  # The node gets a deadline of its own (OUTRIGGER_UP_TIMEOUT again from here): importing the
  # images alone takes 10 to 30 s, more on a slow disk, after the control plane used its share.
  DEADLINE=$((SECONDS + TIMEOUT))
  write_containerd_config
  write_kubelet_config
  mkdir -p "${NODE_DIR}/kubelet" "${NODE_DIR}/pod-logs"
  log "real node: starting containerd $(containerd --version | awk '{print $3}') (socket ${CONTAINERD_SOCK})"
  start containerd "$(command -v containerd)" --config "${NODE_DIR}/containerd/config.toml"
  wait_for "containerd" containerd -- node_ctr version
  import_images
  log "real node: starting kubelet and kube-proxy ${KUBERNETES_VERSION} as ${REAL_NODE_NAME} (${NODE_IP})"
  start kubelet "$(bin kubelet)" \
    --config="${NODE_DIR}/kubelet.yaml" \
    --kubeconfig="${STATE_DIR}/kubelet.kubeconfig" \
    --root-dir="${NODE_DIR}/kubelet" \
    --cert-dir="${NODE_DIR}/kubelet/pki" \
    --hostname-override="${REAL_NODE_NAME}" \
    --node-ip="${NODE_IP}" \
    --node-labels="${REAL_NODE_LABEL}" \
    --v=1
  start kube-proxy "$(bin kube-proxy)" --config="${NODE_DIR}/kube-proxy.yaml" --v=1
  wait_for "kube-proxy's first sync" kube-proxy -- \
    curl -sf --max-time 2 "http://127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}/healthz"
  wait_for "real node ${REAL_NODE_NAME} Ready" containerd kubelet kube-proxy -- node_ready
  sed -e "s#@IMAGE@#$(image_ref coredns)#" -e "s#@DNS_IP@#${DNS_IP}#" \
    "${CLUSTER_HERE}/manifests/coredns.yaml" | kc apply -f - >/dev/null || fail "applying cluster DNS failed"
  wait_for "cluster DNS (CoreDNS on ${REAL_NODE_NAME})" containerd kubelet kube-proxy -- \
    kc -n kube-system rollout status deployment/coredns --timeout=2s
}

# ----------------------------------------------------------------------------------- down

# Kills every process in the kubelet's pod cgroups (the containers: their shims are gone
# with containerd, the processes are not), then removes those cgroups, deepest first.
kill_pod_processes() {
  local round pids
  for round in 1 2 3 4 5 6 7 8 9 10; do
    pids="$({ find /sys/fs/cgroup/*/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null || true; } | sort -u)"
    [[ -n "${pids}" ]] || break
    # shellcheck disable=SC2086
    kill -KILL ${pids} 2>/dev/null || true
    sleep 0.3
  done
  local d
  { find /sys/fs/cgroup/*/kubepods -depth -type d 2>/dev/null || true; } | while read -r d; do rmdir "${d}" 2>/dev/null || true; done
  # containerd's own namespace cgroups, where nothing was there before the node
  [[ -s "${HOST_BEFORE}" ]] || return 0
  for d in /sys/fs/cgroup/*/k8s.io; do
    if [[ -d "${d}" ]] && ! grep -qx "cgroup ${d}" "${HOST_BEFORE}"; then
      find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null || true
    fi
  done
  return 0
}

# Unmounts what the node mounted: everything under the state folder (overlay roots, shm,
# the kubelet's volumes) and the network namespaces containerd pinned, deepest first.
unmount_node() {
  local m
  { awk '{print $5}' /proc/self/mountinfo | grep -E "^(${STATE_DIR}/|/run/netns/cni-|/var/run/netns/cni-|/run/containerd/)" || true; } |
    sort -r | while read -r m; do
      umount "${m}" 2>/dev/null || umount -l "${m}" 2>/dev/null || log "could not unmount ${m}"
    done
  local ns
  for ns in /var/run/netns/cni-* /run/netns/cni-*; do [[ -e "${ns}" ]] && rm -f "${ns}"; done
  return 0
}

# Removes the chains kube-proxy, the kubelet, CNI and node.sh made (KUBE-*, CNI-*,
# OUTRIGGER-*) and every rule that jumps to them, table by table, in one restore each.
remove_chains() {
  local t
  for t in iptables ip6tables; do
    command -v "${t}-save" >/dev/null 2>&1 || continue
    local saved
    saved="$("${t}-save" 2>/dev/null)" || continue
    grep -qE '(KUBE-|CNI-|OUTRIGGER-)' <<<"${saved}" || continue
    grep -vE '^:(KUBE-|CNI-|OUTRIGGER-)|-j (KUBE-|CNI-|OUTRIGGER-)|^-A (KUBE-|CNI-|OUTRIGGER-)' <<<"${saved}" |
      "${t}-restore" || log "${t}-restore failed: chains may be left (${t}-save shows them)"
  done
  remove_created_tables
}

# iptables over nf_tables makes a table (filter, nat, ...) the first time a rule goes in and
# never removes it: a table that was not there before the node and holds no rule now goes,
# with nft (Debian's nftables).
remove_created_tables() {
  [[ -s "${HOST_BEFORE}" ]] || return 0
  command -v nft >/dev/null 2>&1 || { log "nft is not installed: empty iptables tables stay"; return 0; }
  local t family table
  for t in iptables ip6tables; do
    command -v "${t}-save" >/dev/null 2>&1 || continue
    family=ip; [[ "${t}" == ip6tables ]] && family=ip6
    for table in $("${t}-save" 2>/dev/null | sed -n 's/^\*//p'); do
      grep -qx "${t} \*${table}" "${HOST_BEFORE}" && continue
      if "${t}-save" -t "${table}" 2>/dev/null | grep -q '^-A '; then
        log "${t} table ${table} was not there before the node but holds rules: left as it is"
        continue
      fi
      nft delete table "${family}" "${table}" 2>/dev/null || log "could not delete the empty ${t} table ${table}"
    done
  done
}

restore_sysctls() {
  [[ -s "${HOST_BEFORE}" ]] || return 0
  local key before now
  for key in "${NODE_SYSCTLS[@]}"; do
    before="$(sed -n "s/^sysctl ${key//./\\.} = //p" "${HOST_BEFORE}")"
    [[ -n "${before}" ]] || continue
    now="$(sysctl -n "${key}" 2>/dev/null | tr '\t' ' ')" || continue
    [[ "${now}" == "${before}" ]] || sysctl -qw "${key}=${before}" >/dev/null 2>&1 ||
      log "could not restore ${key} to ${before}"
  done
}

# The hard-coded paths that were absent before the node started are removed again.
remove_created_paths() {
  [[ -s "${HOST_BEFORE}" ]] || return 0
  local p
  sed -n 's/^path \(.*\) absent$/\1/p' "${HOST_BEFORE}" | while read -r p; do
    [[ -e "${p}" ]] || continue
    case "${p}" in /var/lib/kubelet | /var/log/containers | /var/log/pods | /run/containerd | /var/run/netns | /var/lib/cni)
      rm -rf -- "${p}" ;;
    esac
  done
}

# Called by down.sh once every process is stopped.
node_cleanup() {
  [[ -e "${NODE_DIR}/.on" || -s "${HOST_BEFORE}" ]] || return 0
  kill_pod_processes
  unmount_node
  remove_chains
  ip link del "${NODE_BRIDGE}" 2>/dev/null || true
  restore_sysctls
  remove_created_paths
  [[ -s "${HOST_BEFORE}" ]] || return 0
  local after="${HOST_BEFORE%.before}.after"
  bash "${CLUSTER_HERE}/host-state.sh" >"${after}"
  if ! bash "${CLUSTER_HERE}/host-state.sh" diff "${HOST_BEFORE}" "${after}" >"${after}.diff"; then
    log "real node: the machine is NOT as it was before the node started:"
    cat "${after}.diff" >&2
    return 1
  fi
  log "real node: machine restored: $(wc -l <"${HOST_BEFORE}") lines of host state (sysctls, iptables, mounts, cgroups, links, paths, processes) as before"
  rm -f "${HOST_BEFORE}" "${after}" "${after}.diff"
}
