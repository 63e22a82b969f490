#!/usr/bin/env bash
# Hands the images of `make images` (the index in <cache>/images) to the local cluster's real
# node: its containerd imports each archive (what is there already costs little). up.sh does
# this at start; the in-cluster suites run it again after rebuilding Outrigger's image.
set -euo pipefail
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"
fail() { die "$1"; }
real_node_on || die "the local cluster (${STATE_DIR}) has no real node"
import_images
