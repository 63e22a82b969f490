#!/usr/bin/env bash
# The machine packages the local cluster's real node and `make images` need, from Debian:
# containerd, runc and the CNI plugins run the node's containers; iptables and conntrack are
# kube-proxy's (nft removes the tables iptables leaves behind); buildah and debootstrap build
# the images without a daemon or a registry.
# Installs what is missing when it can (root, apt-get); otherwise says what is missing and
# that the local cluster will run kwok nodes only, and succeeds: nothing else needs them.
set -euo pipefail

PACKAGES=(containerd runc containernetworking-plugins iptables nftables conntrack buildah debootstrap)

log() { printf '[packages %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  log "not a Debian-like machine (no dpkg/apt-get): install ${PACKAGES[*]} yourself for the real node;"
  log "without them the local cluster runs kwok nodes only and the in-cluster suite is skipped"
  exit 0
fi

missing=()
for p in "${PACKAGES[@]}"; do installed "${p}" || missing+=("${p}"); done
if ((${#missing[@]} == 0)); then
  log "all present: ${PACKAGES[*]}"
  exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
  log "missing ${missing[*]} and not root: run 'sudo apt-get install -y ${missing[*]}';"
  log "until then the local cluster runs kwok nodes only and the in-cluster suite is skipped"
  exit 0
fi

start=${SECONDS}
log "installing ${missing[*]}"
# Another apt run (unattended upgrades, a second setup) may hold the lock for a while.
apt() { apt-get -o DPkg::Lock::Timeout=300 -qq "$@"; }
apt update
DEBIAN_FRONTEND=noninteractive apt install -y --no-install-recommends "${missing[@]}" >/dev/null
for p in "${missing[@]}"; do installed "${p}" || { log "ERROR: ${p} did not install"; exit 1; }; done
log "installed ${missing[*]} in $((SECONDS - start))s"
