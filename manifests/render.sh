#!/usr/bin/env bash
# Renders manifests/install.yaml from manifests/chart with the chart's defaults (and the
# namespace created, as `kubectl apply -f` needs it), using the Helm that
# e2e/cluster/build.sh builds. e2e/test/install.test.ts fails when the two drift apart.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "${here}/../e2e/cluster/versions.env"
helm="${OUTRIGGER_CACHE:-${HOME}/.cache/outrigger}/bin/helm-${HELM_VERSION}"
[[ -x "${helm}" ]] || { echo "render.sh: ${helm} not found; run make cluster-build" >&2; exit 1; }
{
  echo "# Outrigger, rendered from manifests/chart by manifests/render.sh (make manifests)."
  echo "# Install: kubectl apply -f manifests/install.yaml   Details: docs/install.md"
  "${helm}" template outrigger "${here}/chart" --namespace outrigger-system --set namespace.create=true
} > "${here}/install.yaml"
echo "wrote ${here}/install.yaml" >&2
