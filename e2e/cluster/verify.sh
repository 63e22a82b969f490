#!/usr/bin/env bash
# Hand check of a running cluster (default: the local one; honours KUBECONFIG):
# version, RBAC, TokenRequest, Deployment/StatefulSet/DaemonSet readiness on the
# fake nodes, and a Deployment rollout. Works in a throwaway namespace that it
# deletes at the end. Exit code 0 = all good. Not a substitute for the e2e suites.
set -euo pipefail

# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

export KUBECONFIG="${KUBECONFIG:-${ADMIN_KUBECONFIG}}"
[[ -s "${KUBECONFIG}" ]] || die "no kubeconfig at ${KUBECONFIG}: run make cluster-up"
NS="outrigger-verify-$$"
k() { "${KUBECTL}" -n "${NS}" "$@"; }
ok() { log "ok: $*"; }
cleanup() { "${KUBECTL}" delete namespace "${NS}" --wait=false >/dev/null 2>&1 || true; }
trap cleanup EXIT

server="$("${KUBECTL}" version -o json | sed -n 's/.*"gitVersion": "\([^"]*\)".*/\1/p' | tail -1)"
[[ -n "${server}" ]] || die "kubectl version: no server version"
ok "server version ${server}"

[[ "$("${KUBECTL}" auth can-i create pods --as="system:serviceaccount:default:nobody" 2>/dev/null || true)" == "no" ]] \
  || die "RBAC: a ServiceAccount without any Role may create pods"
ok "RBAC denies a ServiceAccount without a Role"

"${KUBECTL}" create namespace "${NS}" >/dev/null
until k get serviceaccount default >/dev/null 2>&1; do sleep 0.2; done
k create serviceaccount verifier >/dev/null
k create role pod-reader --verb=get,list --resource=pods >/dev/null
k create rolebinding verifier --role=pod-reader --serviceaccount="${NS}:verifier" >/dev/null
sakc="$(mktemp)"
trap 'cleanup; rm -f "${sakc}"' EXIT
KUBECONFIG="${KUBECONFIG}" "${CLUSTER_HERE}/sa-kubeconfig.sh" "${NS}" verifier 10m >"${sakc}"
KUBECONFIG="${sakc}" "${KUBECTL}" get pods >/dev/null 2>&1 || die "TokenRequest: ServiceAccount with a Role cannot list pods"
if KUBECONFIG="${sakc}" "${KUBECTL}" get secrets >/dev/null 2>&1; then die "ServiceAccount may list secrets"; fi
ok "TokenRequest token works, and only with the ServiceAccount's Role"

k apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: registry.example/web:1}]}
---
apiVersion: v1
kind: Service
metadata: {name: db}
spec: {clusterIP: None, selector: {app: db}, ports: [{port: 5432}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: registry.example/db:1}]}
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec: {containers: [{name: agent, image: registry.example/agent:1}]}
YAML
k rollout status deployment/web --timeout=60s >/dev/null
k rollout status statefulset/db --timeout=60s >/dev/null
k rollout status daemonset/agent --timeout=60s >/dev/null
k wait --for=condition=Ready pod --all --timeout=60s >/dev/null
nodes="$("${KUBECTL}" get nodes --no-headers | wc -l)"
ds_nodes="$(k get pods -l app=agent -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)"
[[ "${ds_nodes}" -eq "${nodes}" ]] || die "DaemonSet runs on ${ds_nodes} of ${nodes} nodes"
ok "Deployment (3), StatefulSet (2), DaemonSet (${ds_nodes} nodes): all pods Ready"

old_rs="$(k get rs -l app=web -o jsonpath='{.items[0].metadata.name}')"
k set image deployment/web web=registry.example/web:2 >/dev/null
k rollout status deployment/web --timeout=60s >/dev/null
new_rs="$(k get rs -l app=web -o jsonpath='{range .items[?(@.spec.replicas>0)]}{.metadata.name}{end}')"
[[ -n "${new_rs}" && "${new_rs}" != "${old_rs}" ]] || die "rollout: no new ReplicaSet (old ${old_rs}, now ${new_rs})"
deadline=$((SECONDS + 30))
until [[ "$(k get pods -l app=web --no-headers 2>/dev/null | wc -l)" -eq 3 ]]; do
  ((SECONDS < deadline)) || die "rollout: old pods still there after 30 s"
  sleep 0.2
done
ok "template change rolled web from ${old_rs} to ${new_rs}"
log "all checks passed"
