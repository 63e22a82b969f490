#!/usr/bin/env bash
# Stop the local control plane started by up.sh and remove all of its state
# (${OUTRIGGER_CLUSTER_DIR:-<cache>/cluster}, including logs). Safe to run when
# nothing is up. Env: OUTRIGGER_CACHE, OUTRIGGER_CLUSTER_DIR.
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

lock_cluster

if [[ ! -e "${STATE_DIR}" ]] && [[ -z "$(state_pids)" ]]; then
  log "no cluster state at ${STATE_DIR}; nothing to stop"
  exit 0
fi

stop_all

left="$(state_pids)"
[[ -z "${left}" ]] || die "processes still running after SIGKILL: ${left//$'\n'/ }"

restored=0
node_cleanup || restored=$?
remove_state
log "cluster stopped; state ${STATE_DIR} removed"
exit "${restored}"
