# Shared settings and helpers for up.sh / down.sh. Sourced, not executed.
# shellcheck shell=bash disable=SC2034  # variables are used by the scripts sourcing this

CLUSTER_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
. "${CLUSTER_HERE}/versions.env"

OUTRIGGER_CACHE="${OUTRIGGER_CACHE:-${HOME}/.cache/outrigger}"
STATE_DIR="${OUTRIGGER_CLUSTER_DIR:-${OUTRIGGER_CACHE}/cluster}"
# absolute paths: they are printed, put in kubeconfigs and matched in /proc
[[ "${OUTRIGGER_CACHE}" == /* ]] || OUTRIGGER_CACHE="${PWD}/${OUTRIGGER_CACHE}"
[[ "${STATE_DIR}" == /* ]] || STATE_DIR="${PWD}/${STATE_DIR}"
STATE_DIR="${STATE_DIR%/}"
BIN_DIR="${OUTRIGGER_CACHE}/bin"
SHARE_DIR="${OUTRIGGER_CACHE}/share"
PKI_DIR="${STATE_DIR}/pki"
RUN_DIR="${STATE_DIR}/run"
LOG_DIR="${STATE_DIR}/logs"
ADMIN_KUBECONFIG="${STATE_DIR}/kubeconfig"

# Ports (all bound to 127.0.0.1 only). Chosen away from the usual defaults
# (2379/6443/10257/10259/...) so a real cluster on the same host does not clash.
ETCD_PORT="${OUTRIGGER_ETCD_PORT:-26379}"
ETCD_PEER_PORT="${OUTRIGGER_ETCD_PEER_PORT:-26380}"
APISERVER_PORT="${OUTRIGGER_APISERVER_PORT:-26443}"
KCM_PORT="${OUTRIGGER_KCM_PORT:-26457}"
SCHEDULER_PORT="${OUTRIGGER_SCHEDULER_PORT:-26459}"
KWOK_PORT="${OUTRIGGER_KWOK_PORT:-26447}"
NODE_COUNT="${OUTRIGGER_NODES:-3}"

# Start order (the real node's are added by up.sh when it has one, node.sh).
CONTROL_PLANE=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
NODE_COMPONENTS=(containerd kubelet kube-proxy)
COMPONENTS=("${CONTROL_PLANE[@]}")

export PATH="/usr/local/go/bin:${PATH}"
# kubectl: the one built by build.sh at the pinned release (no version-skew
# warnings), else whatever is on PATH; KUBECTL overrides both.
if [[ -z "${KUBECTL:-}" ]]; then
  if [[ -x "${BIN_DIR}/kubectl-${KUBERNETES_VERSION}" ]]; then
    KUBECTL="${BIN_DIR}/kubectl-${KUBERNETES_VERSION}"
  else
    KUBECTL=kubectl
  fi
fi

log() { printf '[cluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[cluster] ERROR: %s\n' "$*" >&2; exit 1; }

pid_of() { # prints the pid recorded for a component, if any
  local f="${RUN_DIR}/$1.pid"
  [[ -s "${f}" ]] && cat "${f}"
}

alive() { # pid: running (a zombie is not: PID 1 may never reap our orphans)
  [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null || return 1
  local stat
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != "Z" ]]
}

# A live process started by this tooling: one of our cached binaries, run with
# paths under the state directory. Guards against pid files that outlived a
# reboot and now name someone else's process.
ours() { # pid
  alive "${1:-}" || return 1
  local cmd
  cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline")" || return 1
  node_program "${cmd}"
}

# A command line of one of the cluster's programs: our cached binaries, or the real node's
# containerd and its shims (Debian's), each run with paths under the state directory.
node_program() { # command line
  case "$1" in
    "${BIN_DIR}/"*"${STATE_DIR}/"* | "/usr/bin/containerd "*"${STATE_DIR}/"* | \
      "/usr/bin/containerd-shim-runc-v2 "*"${STATE_DIR}/"*) return 0 ;;
    *) return 1 ;;
  esac
}

# Processes running one of our cached binaries with arguments under the state
# directory: finds leftovers (e.g. after a lost pid file) without matching
# anything by a broad name.
state_pids() {
  local p cmd
  for p in /proc/[0-9]*; do
    p="${p#/proc/}"
    [[ "${p}" == "$$" || "${p}" == "${BASHPID}" ]] && continue
    cmd="$(tr '\0' ' ' 2>/dev/null <"/proc/${p}/cmdline")" || continue
    if node_program "${cmd}"; then printf '%s\n' "${p}"; fi
  done
}

# Stop every component, in tiers so that nothing waits on a dependency that is
# already gone: the API server's clients first (its graceful shutdown waits for
# their connections), then the API server, then etcd. Each tier: SIGTERM to each
# process group (each component runs in its own session, pgid == pid), wait up
# to 10 s, SIGKILL what is left.
stop_tier() { # component...
  local name pid pids=()
  for name in "$@"; do
    pid="$(pid_of "${name}" || true)"
    if ours "${pid}"; then
      log "stopping ${name} (pid ${pid})"
      kill -TERM -- "-${pid}" 2>/dev/null || kill -TERM "${pid}" 2>/dev/null || true
      pids+=("${pid}")
    fi
  done
  local deadline=$((SECONDS + 10)) left
  while ((SECONDS < deadline)); do
    left=0
    for pid in "${pids[@]}"; do alive "${pid}" && left=1; done
    ((left == 0)) && break
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    if alive "${pid}"; then
      log "pid ${pid} still running 10 s after SIGTERM: SIGKILL"
      kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
    fi
  done
}

stop_all() {
  stop_tier kwok kube-scheduler kube-controller-manager kube-proxy kubelet
  # the containers outlive the kubelet: end them while containerd still watches them
  if real_node_on; then kill_pod_processes; fi
  stop_tier containerd
  stop_tier kube-apiserver
  stop_tier etcd
  # Leftovers that lost their pid file (e.g. an interrupted up.sh).
  local stray
  stray="$(state_pids)"
  if [[ -n "${stray}" ]]; then
    log "killing leftover processes using ${STATE_DIR}: $(echo "${stray}" | tr '\n' ' ')"
    # shellcheck disable=SC2086
    kill -KILL ${stray} 2>/dev/null || true
  fi
  local deadline=$((SECONDS + 5))
  while [[ -n "$(state_pids)" ]] && ((SECONDS < deadline)); do sleep 0.2; done
  rm -f "${RUN_DIR}"/*.pid 2>/dev/null || true
}

# Serialize up.sh/down.sh runs on one cache (e.g. two test runners starting the
# cluster at once). The lock is on the cache directory itself, so it leaves no
# file behind; fd 9 must not leak into the components (see up.sh start()).
lock_cluster() {
  mkdir -p "${OUTRIGGER_CACHE}"
  exec 9<"${OUTRIGGER_CACHE}"
  if ! flock -n 9; then
    log "another up.sh/down.sh is running on ${OUTRIGGER_CACHE}; waiting for it"
    flock -w 180 9 || die "gave up waiting for the lock on ${OUTRIGGER_CACHE}"
  fi
}

# Remove the state directory, but only if it is ours (it carries the marker
# up.sh writes first) or empty: a mistyped OUTRIGGER_CLUSTER_DIR must not cost
# anyone their files.
STATE_MARKER=".outrigger-cluster"
remove_state() {
  [[ -e "${STATE_DIR}" ]] || return 0
  case "${STATE_DIR}" in
    "" | "/" | "${HOME%/}") die "refusing to remove ${STATE_DIR:-<empty>}" ;;
  esac
  if [[ ! -e "${STATE_DIR}/${STATE_MARKER}" ]] && [[ -n "$(ls -A "${STATE_DIR}" 2>/dev/null)" ]]; then
    die "${STATE_DIR} is not empty and has no ${STATE_MARKER} marker: not removing it"
  fi
  rm -rf -- "${STATE_DIR}"
}

admin_curl() { # path -> body; fails on HTTP errors
  curl -sf --max-time 5 --cacert "${PKI_DIR}/ca.crt" --cert "${PKI_DIR}/admin.crt" \
    --key "${PKI_DIR}/admin.key" "https://127.0.0.1:${APISERVER_PORT}$1"
}

# Starts a component in the background, its output appended to its log (up.sh starts with a
# fresh log; disrupt.sh restarts a component into the same one).
start() { # name args...
  local name="$1"; shift
  local logf="${LOG_DIR}/${name}.log" pidf="${RUN_DIR}/${name}.pid"
  printf '# %s\n' "$*" >>"${logf}"
  rm -f "${pidf}"
  # Own session => own process group (pgid == pid) for down.sh. The pid file is
  # written by the process itself right before it execs the component.
  # shellcheck disable=SC2016  # $$ and $@ are for the inner bash
  env -u HTTP_PROXY -u HTTPS_PROXY -u http_proxy -u https_proxy \
    setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "${pidf}" "$@" >>"${logf}" 2>&1 </dev/null 9<&- &
  local i
  for ((i = 0; i < 50; i++)); do [[ -s "${pidf}" ]] && break; sleep 0.02; done
  log "started ${name} (pid $(cat "${pidf}" 2>/dev/null || echo '?'), log ${logf})"
}

# shellcheck source=node.sh
. "${CLUSTER_HERE}/node.sh"
if real_node_on; then COMPONENTS+=("${NODE_COMPONENTS[@]}"); fi
