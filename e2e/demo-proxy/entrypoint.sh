#!/bin/sh
# The demo proxy image's entry point. The injection runs this image twice in a pod: as the
# proxy sidecar (no arguments) and, under the proxy-init image's name, as the init container
# that redirects the pod's traffic (with --proxy-uid, --inbound-port, ... arguments and a small
# memory limit). As the init container it only says what a real proxy-init would redirect, and
# exits: the demo proxy proxies nothing, so nothing is redirected to it.
# --exit-with=N makes the proxy exit at once with status N: a proxy release that crashes, for
# the upgrade health gate's tests (e2e/test/progressive.test.ts).
case "${1:-}" in
  --exit-with=*)
    code="${1#--exit-with=}"
    echo "demo proxy: told to exit with status ${code} (--exit-with), as a broken proxy release would" >&2
    exit "${code}"
    ;;
  --*)
    echo "demo proxy-init: a real proxy-init would redirect this pod's traffic with: $*"
    echo "demo proxy-init: the demo proxy proxies nothing, so the pod's traffic is left as it is"
    exit 0
    ;;
esac
exec node /app/demo-proxy.mjs "$@"
