#!/usr/bin/env bash
# What the real node changes on this machine, printed as sorted lines that two runs can diff:
# sysctls, iptables and ip6tables rules, mounts, cgroups, network links and namespaces, the
# files the kubelet and containerd write outside the cluster's state folder, and processes of
# the node's programs. up.sh records it before it touches anything; down.sh records it again
# once the node is gone and fails if anything differs (e2e/cluster/down.sh, docs/testing.md).
#
#   host-state.sh            print the snapshot
#   host-state.sh diff A B   print what differs between two snapshots; exit 1 if anything does
set -euo pipefail

# Paths the kubelet, containerd and CNI write outside their configured roots (hard-coded in
# them): each is reported as present or absent.
HOST_PATHS=(/var/lib/kubelet /var/log/containers /var/log/pods /run/containerd /var/run/netns
  /var/lib/cni /etc/cni /opt/cni /var/lib/containerd /etc/containerd)

# Sysctls that change by themselves (counters, random values, clocks): never compared.
VOLATILE_SYSCTLS='^(kernel\.random\.|kernel\.ns_last_pid|kernel\.pty\.nr|fs\.(dentry-state|file-nr|inode-nr|inode-state|aio-nr|quota\.)|net\.netfilter\.nf_conntrack_count|kernel\.sched_domain|fs\.binfmt_misc|vm\.stat_refresh|kernel\.perf_event_max)'

snapshot() {
  sysctl -a 2>/dev/null | grep -Ev "${VOLATILE_SYSCTLS}" | sed 's/^/sysctl /' || true
  local t
  for t in iptables ip6tables; do
    command -v "${t}-save" >/dev/null 2>&1 || continue
    # counters and the generated-by/completed comments vary from run to run
    "${t}-save" 2>/dev/null | grep -v '^#' | sed -E 's/\[[0-9]+:[0-9]+\]//' | sed "s/^/${t} /" || true
  done
  awk '{print "mount " $5 " " $9}' /proc/self/mountinfo
  # cgroups three levels deep in every hierarchy; the session's own cgroup is not ours to judge
  find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d 2>/dev/null | grep -v '/process_api' |
    sed 's/^/cgroup /' || true
  ip -o link show 2>/dev/null | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}' || true
  ls /var/run/netns 2>/dev/null | sed 's/^/netns /' || true
  local p
  for p in "${HOST_PATHS[@]}"; do
    if [[ -e "${p}" ]]; then echo "path ${p} present"; else echo "path ${p} absent"; fi
  done
  local pid cmd
  for pid in /proc/[0-9]*; do
    cmd="$(tr '\0' ' ' 2>/dev/null <"${pid}/cmdline")" || continue
    case "${cmd}" in
      *containerd-shim* | */kubelet-v* | */kube-proxy-v* | "/usr/bin/containerd "* | *"/pause "*)
        echo "process ${cmd% }" ;;
    esac
  done
}

if [[ "${1:-}" == "diff" ]]; then
  [[ -s "${2:-}" && -s "${3:-}" ]] || { echo "usage: host-state.sh diff BEFORE AFTER" >&2; exit 2; }
  changes="$(diff <(sort "$2") <(sort "$3") | grep -E '^[<>]' || true)"
  if [[ -n "${changes}" ]]; then
    printf '%s\n' "${changes}" | sed -e 's/^</  before:/' -e 's/^>/  after: /'
    exit 1
  fi
  exit 0
fi
snapshot | sort
