#!/usr/bin/env bash
# Print a kubeconfig that authenticates as a ServiceAccount with a token from
# the TokenRequest API (`kubectl create token`), so a process can run with only
# that ServiceAccount's RBAC.
#
# Usage: sa-kubeconfig.sh NAMESPACE SERVICEACCOUNT [DURATION] > sa.kubeconfig
#   DURATION: token lifetime, e.g. 1h (default), 10m, 24h.
# The cluster (server + CA) comes from the current KUBECONFIG (default: the
# local cluster's admin kubeconfig if it exists). The ServiceAccount must exist.
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

[[ $# -ge 2 && $# -le 3 ]] || die "usage: $0 NAMESPACE SERVICEACCOUNT [DURATION]"
ns="$1" sa="$2" duration="${3:-1h}"
if [[ -z "${KUBECONFIG:-}" && -s "${ADMIN_KUBECONFIG}" ]]; then
  export KUBECONFIG="${ADMIN_KUBECONFIG}"
fi

token="$("${KUBECTL}" -n "${ns}" create token "${sa}" --duration="${duration}")" \
  || die "kubectl create token ${sa} -n ${ns} failed"
server="$("${KUBECTL}" config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')"
ca="$("${KUBECTL}" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')"
if [[ -z "${ca}" ]]; then
  ca_file="$("${KUBECTL}" config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority}')"
  [[ -z "${ca_file}" ]] || ca="$(base64 -w0 <"${ca_file}")"
fi

cat <<YAML
apiVersion: v1
kind: Config
clusters:
- name: cluster
  cluster:
    server: ${server}
${ca:+    certificate-authority-data: ${ca}
}users:
- name: system:serviceaccount:${ns}:${sa}
  user:
    token: ${token}
contexts:
- name: ${sa}@${ns}
  context:
    cluster: cluster
    user: system:serviceaccount:${ns}:${sa}
    namespace: ${ns}
current-context: ${sa}@${ns}
YAML
