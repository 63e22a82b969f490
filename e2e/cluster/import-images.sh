#!/usr/bin/env bash
# Hands the images of `make images` (the index in <cache>/images) to the local cluster's real
# node: its containerd imports each archive, or only the images named (outrigger, pause, ...).
# up.sh imports them all at start; the in-cluster suites import Outrigger's again after
# rebuilding it.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
fail() { die "$1"; }
real_node_on || die "the local cluster (${STATE_DIR}) has no real node"
import_images "$@"
