#!/usr/bin/env bash
# Disturbs one running component of the local control plane (e2e/src/disrupt.ts drives it for
# the controller's chaos loop; it works by hand as well):
#
#   disrupt.sh restart COMPONENT [DOWN_SECONDS [TERM|KILL]]
#       stops COMPONENT (SIGTERM to its process group and SIGKILL after 10 s, or SIGKILL at
#       once), leaves it down DOWN_SECONDS (default 2), starts it again with the command line it
#       ran with (read from /proc), appending to its log, and waits until it is ready (the API
#       server's /readyz, etcd's /health; others: still running a second later). Prints one
#       line on stdout: "stopped_ms=<signal to exit> ready_ms=<start to ready>".
#   disrupt.sh freeze COMPONENT SECONDS
#       SIGSTOP, then SIGCONT SECONDS later; the SIGCONT also comes when this script is
#       interrupted. Open connections stay open and unanswered: watches go silent.
#
# Env as up.sh (OUTRIGGER_CACHE, OUTRIGGER_CLUSTER_DIR, OUTRIGGER_*_PORT, OUTRIGGER_UP_TIMEOUT).
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

usage() { die "usage: disrupt.sh restart COMPONENT [DOWN_SECONDS [TERM|KILL]] | freeze COMPONENT SECONDS"; }
now_ms() { date +%s%3N; }

[[ $# -ge 2 ]] || usage
verb="$1" component="$2"
case " ${COMPONENTS[*]} " in
  *" ${component} "*) ;;
  *) die "unknown component ${component} (one of: ${COMPONENTS[*]})" ;;
esac
seconds_arg() { [[ "$1" =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "not a number of seconds: $1"; printf '%s\n' "$1"; }

lock_cluster
pid="$(pid_of "${component}" || true)"
ours "${pid}" || die "${component} of ${STATE_DIR} is not running (make cluster-up starts it)"

ready() {
  case "${component}" in
    kube-apiserver) admin_curl /readyz >/dev/null 2>&1 ;;
    etcd) curl -sf --max-time 2 "http://127.0.0.1:${ETCD_PORT}/health" >/dev/null 2>&1 ;;
    *) sleep 1; alive "$(pid_of "${component}" || true)" ;;
  esac
}

restart() {
  local down signal argv=()
  down="$(seconds_arg "${1:-2}")"
  signal="${2:-TERM}"
  [[ "${signal}" == TERM || "${signal}" == KILL ]] || die "signal must be TERM or KILL, not ${signal}"
  mapfile -d '' -t argv <"/proc/${pid}/cmdline"
  ((${#argv[@]} > 0)) || die "cannot read the command line of ${component} (pid ${pid})"
  local t0 stopped_ms
  t0="$(now_ms)"
  log "stopping ${component} (pid ${pid}) with SIG${signal}"
  kill "-${signal}" -- "-${pid}" 2>/dev/null || kill "-${signal}" "${pid}" 2>/dev/null || true
  local deadline=$((SECONDS + 10))
  while alive "${pid}" && ((SECONDS < deadline)); do sleep 0.05; done
  if alive "${pid}"; then
    log "pid ${pid} still running 10 s after SIGTERM: SIGKILL"
    kill -KILL -- "-${pid}" 2>/dev/null || kill -KILL "${pid}" 2>/dev/null || true
    while alive "${pid}"; do sleep 0.05; done
  fi
  stopped_ms=$(($(now_ms) - t0))
  log "${component} stopped after ${stopped_ms} ms; down for ${down} s"
  sleep "${down}"
  local t1 timeout="${OUTRIGGER_UP_TIMEOUT:-60}"
  t1="$(now_ms)"
  start "${component}" "${argv[@]}"
  local until=$((SECONDS + timeout))
  until ready; do
    alive "$(pid_of "${component}" || true)" || die "${component} exited after the restart (see ${LOG_DIR}/${component}.log)"
    ((SECONDS < until)) || die "${component} not ready ${timeout} s after the restart (see ${LOG_DIR}/${component}.log)"
    sleep 0.1
  done
  log "${component} ready again $(($(now_ms) - t1)) ms after its start"
  printf 'stopped_ms=%s ready_ms=%s\n' "${stopped_ms}" "$(($(now_ms) - t1))"
}

freeze() {
  local seconds
  seconds="$(seconds_arg "${1:-}")"
  # Whatever ends this script, the component runs again.
  trap 'kill -CONT "${pid}" 2>/dev/null || true' EXIT
  trap 'exit 1' INT TERM HUP
  kill -STOP "${pid}"
  log "froze ${component} (pid ${pid}) for ${seconds} s"
  sleep "${seconds}"
  kill -CONT "${pid}"
  log "thawed ${component} (pid ${pid})"
}

case "${verb}" in
  restart) restart "${@:3}" ;;
  freeze) freeze "${@:3}" ;;
  *) usage ;;
esac
