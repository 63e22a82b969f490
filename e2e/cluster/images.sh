#!/usr/bin/env bash
# Builds, with buildah (no daemon, no registry), the images the local cluster's real node runs,
# as OCI archives that up.sh imports into the node's containerd (ctr -n k8s.io images import):
#   localhost/outrigger/pause:1.0              the pod sandbox (e2e/pause/pause.c, static, FROM scratch)
#   localhost/outrigger/demo-proxy:1.0         the injected sidecar's stand-in (e2e/demo-proxy)
#   localhost/outrigger/log-shipper:1.0        a second sidecar set's stand-in (e2e/log-shipper)
#   localhost/outrigger/coredns:<version>      the node's cluster DNS (COREDNS_VERSION in versions.env,
#                                              built from its Go module, static, FROM scratch)
#   localhost/outrigger/cert-manager:<version> cert-manager's controller, webhook and cainjector in one
#                                              binary (CERT_MANAGER_VERSION, build.sh's wrapper in
#                                              cert-manager/, static, FROM scratch), for the cert-manager suite
#   localhost/outrigger/outrigger:<tag>        the repository's Dockerfile, unchanged
# and, in buildah's storage only, the Dockerfile's base docker.io/library/node:24-bookworm-slim,
# pulled when a registry answers, else made here: debootstrap bookworm (minbase) plus the
# Node.js 24 of node_modules and the npm that runs `make setup`.
#
# Usage: images.sh [pause|demo-proxy|log-shipper|coredns|cert-manager|outrigger...]   (no names: all of them)
#
# Output: ${OUTRIGGER_CACHE:-~/.cache/outrigger}/images/<name>.oci.tar and images/index, one
# line per image: "<archive file name, relative to images/> <image reference>", in the order
# pause, demo-proxy, log-shipper, coredns, cert-manager, outrigger; an image not named this time keeps its line from the
# previous run. An image's name is its reference's last path element. Stdout carries exactly
# one line when outrigger is built, its reference, and nothing else; logs go to stderr.
# <tag> is a hash of the build's inputs (the files the Dockerfile copies, the Dockerfile,
# .dockerignore, package-lock.json and the base image), so the same sources skip the build;
# OUTRIGGER_IMAGE_TAG forces a tag (sources already built under their hash tag are only tagged
# again: the same image). Every step is skipped when its output is current.
#
# Environment: OUTRIGGER_CACHE, OUTRIGGER_IMAGE_TAG, OUTRIGGER_IMAGE_FORCE=1 (build the
# Outrigger image again, without buildah's layer cache: a new image, e.g. a distinct digest
# for an upgrade test), BUILDAH_STORAGE_DRIVER (overlay or vfs;
# default: overlay where it works), BUILDAH_ISOLATION (oci or chroot; default: oci where it
# works), IMAGES_PULL_TIMEOUT (seconds for the base image's pull, default 20).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "${HERE}/../.." && pwd)"
# shellcheck source=versions.env
. "${HERE}/versions.env"
export PATH="/usr/local/go/bin:${PATH}"

ALL=(pause demo-proxy log-shipper coredns cert-manager outrigger)
WANTED=("$@")
((${#WANTED[@]})) || WANTED=("${ALL[@]}")
for n in "${WANTED[@]}"; do
  [[ " ${ALL[*]} " == *" ${n} "* ]] || { echo "usage: images.sh [${ALL[*]}...]: no image ${n}" >&2; exit 2; }
done
wanted() { [[ " ${WANTED[*]} " == *" $1 "* ]]; }

OUTRIGGER_CACHE="${OUTRIGGER_CACHE:-${HOME}/.cache/outrigger}"
[[ "${OUTRIGGER_CACHE}" == /* ]] || OUTRIGGER_CACHE="${PWD}/${OUTRIGGER_CACHE}"
IMAGES_DIR="${OUTRIGGER_CACHE}/images"
BUILDAH_DIR="${OUTRIGGER_CACHE}/buildah"

BASE_REF="docker.io/library/node:24-bookworm-slim"
NODE_MAJOR=24
DEBIAN_SUITE=bookworm
PAUSE_REF="localhost/outrigger/pause:1.0"
PROXY_REF="localhost/outrigger/demo-proxy:1.0"
PROXY_UID=2102 # the injected proxy's default uid (proxy.uid in the configuration)
SHIPPER_REF="localhost/outrigger/log-shipper:1.0"
SHIPPER_UID=2103
OUTRIGGER_REPO="localhost/outrigger/outrigger"
HOST_CA=/etc/ssl/certs/ca-certificates.crt

log() { printf '[images %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf '[images] ERROR: %s\n' "$*" >&2; exit 1; }

# --- tools --------------------------------------------------------------------------------

APT_UPDATED=0
# need <command> <debian package>...: installs the packages with apt-get when the command is
# missing and we are root on a Debian-like system; otherwise says what to install.
need() {
  local cmd="$1"
  shift
  command -v "${cmd}" >/dev/null 2>&1 && return 0
  if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "installing $* (for ${cmd})"
    if [[ "${APT_UPDATED}" -eq 0 ]]; then
      apt-get update -qq >&2 || die "apt-get update failed; install $* by hand"
      APT_UPDATED=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 ||
      die "apt-get install $* failed; install them by hand"
    command -v "${cmd}" >/dev/null 2>&1 || die "${cmd} is still missing after installing $*"
  else
    die "${cmd} is missing: install $* (as root on Debian: apt-get install $*)"
  fi
}

need buildah buildah
need git git

# --- buildah ------------------------------------------------------------------------------

# Buildah's storage lives under the cache (nothing in /var/lib/containers). The driver is fixed
# once a storage root exists, so an existing root keeps its driver; a new one gets overlay when
# the kernel lets us mount it (it does here), else vfs (full copies per layer: slower, bigger,
# but works in any sandbox).
mkdir -p "${IMAGES_DIR}" "${BUILDAH_DIR}"
BUILDAH_ROOT="${BUILDAH_DIR}/root"
BUILDAH_RUNROOT="${BUILDAH_DIR}/run"
bh_driver() {
  if [[ -n "${BUILDAH_STORAGE_DRIVER:-}" ]]; then echo "${BUILDAH_STORAGE_DRIVER}"; return; fi
  local d
  for d in overlay vfs; do
    [[ -d "${BUILDAH_ROOT}/${d}" ]] && { echo "${d}"; return; }
  done
  if buildah --root "${BUILDAH_ROOT}" --runroot "${BUILDAH_RUNROOT}" --storage-driver overlay \
    images >/dev/null 2>&1; then
    echo overlay
  else
    rm -rf --one-file-system "${BUILDAH_ROOT:?}" "${BUILDAH_RUNROOT:?}"
    echo vfs
  fi
}
DRIVER="$(bh_driver)"
bh() { buildah --root "${BUILDAH_ROOT}" --runroot "${BUILDAH_RUNROOT}" --storage-driver "${DRIVER}" "$@"; }
bh images >/dev/null || die "buildah cannot open its storage at ${BUILDAH_ROOT} (driver ${DRIVER})"
log "buildah $(buildah --version | awk '{print $3}'), storage ${BUILDAH_ROOT} (${DRIVER})"

image_id() { # the image's ID, or nothing when there is no such image
  { bh images --no-trunc --format '{{.ID}}' "$1" 2>/dev/null || true; } | head -n1
}

# commit <container> <ref>: commits, then removes the image <ref> named before, if nothing else
# names it, so rebuilt images do not pile up in the storage.
commit() {
  local before after
  before="$(image_id "$2")"
  bh commit --quiet --rm "$1" "$2" >/dev/null || die "buildah commit $2 failed"
  after="$(image_id "$2")"
  if [[ -n "${before}" && "${before}" != "${after}" ]]; then
    bh rmi "${before}" >/dev/null 2>&1 || true
  fi
}

WORK="$(mktemp -d "${OUTRIGGER_CACHE}/images-work.XXXXXX")"
CONTAINERS=()
declare -A ENTRY # name -> "<archive> <reference>", for the index
cleanup() {
  local c m
  for c in "${CONTAINERS[@]}"; do bh rm "${c}" >/dev/null 2>&1 || true; done
  # debootstrap mounts proc and sys in its target and unmounts them on exit; should one outlive
  # a failed run, unmount it (deepest first) rather than delete through it into the host's.
  while read -r m; do umount -l "${m}" 2>/dev/null || true; done < <(
    awk -v w="${WORK}/" 'index($5, w) == 1 { print $5 }' /proc/self/mountinfo | sort -r
  )
  rm -rf --one-file-system "${WORK}"
}
trap cleanup EXIT

# new_container <image>: a working container in ${CTR}, named for this run so that the cleanup
# never removes a container of another run sharing the storage. (Not in $(...): CONTAINERS.)
new_container() {
  CTR="outrigger-images-$$-${#CONTAINERS[@]}"
  CONTAINERS+=("${CTR}")
  bh from --quiet --pull=never --name "${CTR}" "$1" >/dev/null || die "buildah from $1 failed"
}

# push <image> <archive name>: writes images/<archive> atomically, named <image> inside (the
# OCI index's org.opencontainers.image.ref.name, which ctr import takes as the image's name).
push() {
  local tmp="${IMAGES_DIR}/.$2.$$"
  rm -f "${tmp}"
  bh push --quiet "$1" "oci-archive:${tmp}:$1" >&2 || die "buildah push $1 to an OCI archive failed"
  mv -f "${tmp}" "${IMAGES_DIR}/$2"
  log "wrote ${IMAGES_DIR}/$2 ($(du -h "${IMAGES_DIR}/$2" | cut -f1))"
}

# current <archive> <inputs hash>: the archive exists and was built from these inputs.
current() { [[ -s "${IMAGES_DIR}/$1" && "$(cat "${IMAGES_DIR}/$1.inputs" 2>/dev/null)" == "$2" ]]; }
hash_of() { sha256sum | cut -c1-64; }

# --- 1. the base image --------------------------------------------------------------------

# The Node.js of node_modules (the npm package `node`): the binary behind node_modules/.bin/node.
node_binary() {
  local bin
  bin="$(readlink -f "${REPO}/node_modules/.bin/node" 2>/dev/null)" ||
    die "no node_modules/.bin/node: run make setup (npm ci) first"
  # the package's bin may be a JavaScript shim; the real binary is in the platform package
  if ! head -c4 "${bin}" | grep -q ELF; then
    bin="$(find "${REPO}/node_modules/node" -path '*/bin/node' -type f -exec sh -c \
      'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \; | head -n1)"
  fi
  [[ -x "${bin}" ]] || die "no Node.js binary behind node_modules/.bin/node: run make setup"
  local v
  v="$("${bin}" --version)" || die "${bin} does not run"
  [[ "${v}" == "v${NODE_MAJOR}."* ]] || die "${bin} is Node.js ${v}, not ${NODE_MAJOR}.x: run make setup"
  echo "${bin}"
}

# The npm that `make setup` ran (the host's; node_modules holds none): its package directory.
npm_dir() {
  local cli
  cli="$(readlink -f "$(command -v npm)" 2>/dev/null)" || die "npm is missing (make setup needs it too)"
  cli="$(dirname "$(dirname "${cli}")")"
  [[ -f "${cli}/bin/npm-cli.js" && -f "${cli}/package.json" ]] || die "cannot find npm's package behind $(command -v npm)"
  echo "${cli}"
}

# The Debian mirror the host's apt uses (deb822 URIs: or one-line deb), else deb.debian.org.
debian_mirror() {
  local m
  m="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
    awk '/^URIs:/ { print $2 } /^deb / { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; break } }' |
    grep -E '/debian/?$' | head -n1 || true)"
  echo "${m:-http://deb.debian.org/debian}"
}

build_base() {
  local node npm mirror rootfs v
  node="$(node_binary)"
  npm="$(npm_dir)"
  v="$("${node}" --version)"
  need debootstrap debootstrap
  mirror="$(debian_mirror)"
  rootfs="${WORK}/rootfs"
  log "making ${BASE_REF}: debootstrap --variant=minbase ${DEBIAN_SUITE} from ${mirror} (about a minute)"
  # libstdc++6 for node (minbase has libc and libgcc but not it)
  debootstrap --variant=minbase --include=libstdc++6 "${DEBIAN_SUITE}" "${rootfs}" "${mirror}" \
    >"${WORK}/debootstrap.log" 2>&1 || {
    tail -n 20 "${WORK}/debootstrap.log" >&2
    die "debootstrap ${DEBIAN_SUITE} from ${mirror} failed (log above)"
  }
  # The official image's layout: node and npm under /usr/local, a user node (1000:1000).
  log "adding Node.js ${v} (${node}) and npm $("${node}" -p "require('${npm}/package.json').version" 2>/dev/null || echo '?') (${npm})"
  install -m 0755 "${node}" "${rootfs}/usr/local/bin/node"
  mkdir -p "${rootfs}/usr/local/lib/node_modules"
  cp -a "${npm}" "${rootfs}/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "${rootfs}/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "${rootfs}/usr/local/bin/npx"
  chroot "${rootfs}" groupadd --gid 1000 node
  chroot "${rootfs}" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  chroot "${rootfs}" /usr/local/bin/node --version >/dev/null || die "node does not run in the new root"
  # what a slim image leaves out
  if awk -v w="${rootfs}/" 'index($5, w) == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    die "something is still mounted under ${rootfs} after debootstrap"
  fi
  rm -rf --one-file-system "${rootfs:?}"/var/lib/apt/lists/* "${rootfs:?}"/var/cache/apt/* \
    "${rootfs:?}"/var/log/* "${rootfs:?}"/usr/share/doc/* "${rootfs:?}"/usr/share/man/* \
    "${rootfs:?}"/usr/share/info/* "${rootfs:?}"/dev/* "${rootfs:?}"/proc/* "${rootfs:?}"/sys/* \
    "${rootfs:?}"/tmp/* "${rootfs:?}"/run/*
  tar --numeric-owner --xattrs -C "${rootfs}" -cf "${WORK}/rootfs.tar" .
  rm -rf --one-file-system "${rootfs:?}"
  local c
  new_container scratch
  c="${CTR}"
  bh add --quiet "${c}" "${WORK}/rootfs.tar" / >/dev/null
  bh config --os linux --arch amd64 \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "NODE_VERSION=${v#v}" --cmd node \
    --label org.opencontainers.image.description="made by e2e/cluster/images.sh: debian ${DEBIAN_SUITE} minbase + Node.js ${v}" \
    "${c}"
  commit "${c}" "${BASE_REF}"
  rm -f "${WORK}/rootfs.tar"
}

ensure_base() {
  if [[ -n "$(image_id "${BASE_REF}")" ]]; then
    log "${BASE_REF}: present in buildah's storage"
    return
  fi
  log "${BASE_REF}: pulling (at most ${IMAGES_PULL_TIMEOUT:-20} s)"
  if timeout "${IMAGES_PULL_TIMEOUT:-20}" buildah --root "${BUILDAH_ROOT}" --runroot "${BUILDAH_RUNROOT}" \
    --storage-driver "${DRIVER}" pull --quiet "${BASE_REF}" >/dev/null 2>"${WORK}/pull.log"; then
    log "${BASE_REF}: pulled"
    return
  fi
  log "${BASE_REF}: no registry ($(tail -n1 "${WORK}/pull.log" | cut -c1-160)); making it here"
  build_base
  log "${BASE_REF}: made"
}

# --- 2. the pause image -------------------------------------------------------------------

PAUSE_SRC="${REPO}/e2e/pause/pause.c"
PAUSE_ARCHIVE="pause-1.0.oci.tar"
build_pause() {
  local inputs
  inputs="$(cat "${PAUSE_SRC}" "${BASH_SOURCE[0]}" | hash_of)"
  ENTRY[pause]="${PAUSE_ARCHIVE} ${PAUSE_REF}"
  if current "${PAUSE_ARCHIVE}" "${inputs}" && [[ -n "$(image_id "${PAUSE_REF}")" ]]; then
    log "${PAUSE_REF}: current"
    return
  fi
  need gcc gcc libc6-dev
  gcc -static -O2 -Wall -Wextra -Werror -o "${WORK}/pause" "${PAUSE_SRC}" || die "cannot compile ${PAUSE_SRC}"
  strip "${WORK}/pause" 2>/dev/null || true
  local c
  new_container scratch
  c="${CTR}"
  bh copy --quiet --chmod 0755 "${c}" "${WORK}/pause" /pause >/dev/null
  # 65535: the user Kubernetes' own pause image runs as
  bh config --os linux --arch amd64 --entrypoint '["/pause"]' --cmd '[]' --user 65535:65535 "${c}"
  commit "${c}" "${PAUSE_REF}"
  push "${PAUSE_REF}" "${PAUSE_ARCHIVE}"
  echo "${inputs}" >"${IMAGES_DIR}/${PAUSE_ARCHIVE}.inputs"
}

# --- 3. the demo proxy --------------------------------------------------------------------

PROXY_SRC="${REPO}/e2e/demo-proxy/demo-proxy.mjs"
PROXY_ENTRY="${REPO}/e2e/demo-proxy/entrypoint.sh"
PROXY_ARCHIVE="demo-proxy-1.0.oci.tar"
build_proxy() {
  local inputs
  inputs="$({ image_id "${BASE_REF}"; cat "${PROXY_SRC}" "${PROXY_ENTRY}" "${BASH_SOURCE[0]}"; } | hash_of)"
  ENTRY[demo-proxy]="${PROXY_ARCHIVE} ${PROXY_REF}"
  if current "${PROXY_ARCHIVE}" "${inputs}" && [[ -n "$(image_id "${PROXY_REF}")" ]]; then
    log "${PROXY_REF}: current"
    return
  fi
  local c
  new_container "${BASE_REF}"
  c="${CTR}"
  bh copy --quiet --chmod 0644 "${c}" "${PROXY_SRC}" /app/demo-proxy.mjs >/dev/null
  bh copy --quiet --chmod 0755 "${c}" "${PROXY_ENTRY}" /app/entrypoint.sh >/dev/null
  # non-root by default (the injection sets runAsUser too); the root filesystem may be read-only
  bh config --cmd '[]' "${c}" # the base's CMD [node] first, or it would follow the entrypoint
  bh config --workingdir /app --user "${PROXY_UID}:${PROXY_UID}" \
    --entrypoint '["/app/entrypoint.sh"]' --port 4143 --port 4140 --port 4191 "${c}"
  commit "${c}" "${PROXY_REF}"
  push "${PROXY_REF}" "${PROXY_ARCHIVE}"
  echo "${inputs}" >"${IMAGES_DIR}/${PROXY_ARCHIVE}.inputs"
}

# --- 3b. the log shipper, a second sidecar set ----------------------------------------------

SHIPPER_SRC="${REPO}/e2e/log-shipper/log-shipper.mjs"
SHIPPER_ARCHIVE="log-shipper-1.0.oci.tar"
build_shipper() {
  local inputs
  inputs="$({ image_id "${BASE_REF}"; cat "${SHIPPER_SRC}" "${BASH_SOURCE[0]}"; } | hash_of)"
  ENTRY[log-shipper]="${SHIPPER_ARCHIVE} ${SHIPPER_REF}"
  if current "${SHIPPER_ARCHIVE}" "${inputs}" && [[ -n "$(image_id "${SHIPPER_REF}")" ]]; then
    log "${SHIPPER_REF}: current"
    return
  fi
  local c
  new_container "${BASE_REF}"
  c="${CTR}"
  bh copy --quiet --chmod 0644 "${c}" "${SHIPPER_SRC}" /app/log-shipper.mjs >/dev/null
  bh config --cmd '[]' "${c}"
  bh config --workingdir /app --user "${SHIPPER_UID}:${SHIPPER_UID}" \
    --entrypoint '["node", "/app/log-shipper.mjs"]' --port 2020 "${c}"
  commit "${c}" "${SHIPPER_REF}"
  push "${SHIPPER_REF}" "${SHIPPER_ARCHIVE}"
  echo "${inputs}" >"${IMAGES_DIR}/${SHIPPER_ARCHIVE}.inputs"
}

# binary_image BIN NAME REF ARCHIVE INPUTS [buildah config flags...]: BIN alone as /NAME in a
# scratch image run as 65532, committed as REF, pushed to ARCHIVE, its inputs recorded.
binary_image() {
  local bin="$1" name="$2" ref="$3" archive="$4" inputs="$5" c
  shift 5
  new_container scratch
  c="${CTR}"
  bh copy --quiet --chmod 0755 "${c}" "${bin}" "/${name}" >/dev/null
  bh config --os linux --arch amd64 --entrypoint "[\"/${name}\"]" --cmd '[]' --user 65532:65532 \
    "$@" "${c}"
  commit "${c}" "${ref}"
  push "${ref}" "${archive}"
  echo "${inputs}" >"${IMAGES_DIR}/${archive}.inputs"
}

# --- 4. CoreDNS, the real node's cluster DNS -----------------------------------------------

# The binary is build.sh's <cache>/bin/coredns-<version>; when it is missing (build.sh not run
# yet) it is built here the way build.sh builds it: inside its own downloaded module (go.sum and
# any replace directives as upstream has them), static, to the same path.
build_coredns() {
  if [[ -z "${COREDNS_VERSION:-}" ]]; then
    log "no COREDNS_VERSION in ${HERE}/versions.env: no CoreDNS image"
    return
  fi
  local v="${COREDNS_VERSION}" ref archive bin inputs
  ref="localhost/outrigger/coredns:${v#v}"
  archive="coredns-${v}.oci.tar"
  bin="${OUTRIGGER_CACHE}/bin/coredns-${v}"
  inputs="$(printf '%s\n' "${v}" | cat - "${BASH_SOURCE[0]}" | hash_of)"
  ENTRY[coredns]="${archive} ${ref}"
  if current "${archive}" "${inputs}" && [[ -n "$(image_id "${ref}")" ]]; then
    log "${ref}: current"
    return
  fi
  if [[ ! -x "${bin}" ]]; then
    log "coredns ${v}: not built yet; building it with build.sh (a few minutes the first time)"
    bash "${HERE}/build.sh" >&2 || die "build.sh failed (its output above)"
    [[ -x "${bin}" ]] || die "build.sh did not build ${bin}"
  fi
  binary_image "${bin}" coredns "${ref}" "${archive}" "${inputs}" --port 53/udp --port 53/tcp
}

# --- 4b. cert-manager, for the cert-manager suite -----------------------------------------

# Like CoreDNS: build.sh's <cache>/bin/cert-manager-<version> (built by build.sh when missing),
# alone in a scratch image; the first argument picks the part (controller, webhook, cainjector).
build_cert_manager() {
  if [[ -z "${CERT_MANAGER_VERSION:-}" ]]; then
    log "no CERT_MANAGER_VERSION in ${HERE}/versions.env: no cert-manager image"
    return
  fi
  local v="${CERT_MANAGER_VERSION}" ref archive bin inputs
  ref="localhost/outrigger/cert-manager:${v#v}"
  archive="cert-manager-${v}.oci.tar"
  bin="${OUTRIGGER_CACHE}/bin/cert-manager-${v}"
  ENTRY[cert-manager]="${archive} ${ref}"
  # build.sh also rebuilds the binary when the wrapper's sources changed
  if [[ ! -x "${bin}" || "$(cat "${bin}.inputs" 2>/dev/null)" != "$({ echo "${v}"; cat "${HERE}"/cert-manager/*.go; } | sha256sum | cut -c1-16)" ]]; then
    log "cert-manager ${v}: not built, or built from other sources; building it with build.sh (about 6 minutes the first time)"
    bash "${HERE}/build.sh" >&2 || die "build.sh failed (its output above)"
    [[ -x "${bin}" ]] || die "build.sh did not build ${bin}"
  fi
  inputs="$({ printf '%s\n' "${v}"; cat "${bin}.inputs" "${BASH_SOURCE[0]}"; } | hash_of)"
  if current "${archive}" "${inputs}" && [[ -n "$(image_id "${ref}")" ]]; then
    log "${ref}: current"
    return
  fi
  binary_image "${bin}" cert-manager "${ref}" "${archive}" "${inputs}"
}

# --- 5. Outrigger, from the Dockerfile ----------------------------------------------------

# The files the Dockerfile copies (its COPY sources, less .dockerignore's test, bench and docs
# exclusions), tracked or not yet tracked, with their contents; plus the base image.
outrigger_inputs() {
  (
    cd "${REPO}"
    image_id "${BASE_REF}"
    git ls-files -z --cached --others --exclude-standard -- \
      Dockerfile .dockerignore package.json package-lock.json tsconfig.base.json \
      shared kube testkit webhook controller cli e2e/package.json |
      grep -zvE '(^|/)(test|bench|testdata|node_modules|dist)/|\.md$' |
      sort -z | xargs -0 -r sha256sum 2>/dev/null || true
  ) | hash_of
}

# oci where runc works (here it does), else chroot (no namespaces: the build's RUN steps share
# the host's kernel view, fine for npm ci and tsc). Probed once per run, with the pause image.
ISOLATION="${BUILDAH_ISOLATION:-}"
pick_isolation() {
  [[ -n "${ISOLATION}" ]] && return
  [[ -n "$(image_id "${PAUSE_REF}")" ]] || build_pause
  local c
  new_container "${PAUSE_REF}"
  c="${CTR}"
  if bh run --isolation oci --network host "${c}" -- /pause -v >/dev/null 2>"${WORK}/isolation.log"; then
    ISOLATION=oci
  else
    log "runc cannot run containers here ($(tail -n1 "${WORK}/isolation.log" | cut -c1-160)); using chroot isolation"
    ISOLATION=chroot
  fi
}

build_outrigger() {
  local hash tag ref archive
  hash="$(outrigger_inputs | cut -c1-12)"
  tag="${OUTRIGGER_IMAGE_TAG:-${hash}}"
  [[ "${tag}" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$ ]] || die "OUTRIGGER_IMAGE_TAG=${tag} is not a valid image tag"
  ref="${OUTRIGGER_REPO}:${tag}"
  archive="outrigger-${tag}.oci.tar"
  OUTRIGGER_REF="${ref}"
  ENTRY[outrigger]="${archive} ${ref}"
  if [[ -s "${IMAGES_DIR}/${archive}" && -z "${OUTRIGGER_IMAGE_FORCE:-}" ]]; then
    log "${ref}: current (${IMAGES_DIR}/${archive})"
    return
  fi
  # a forced tag on sources already built under their own tag: the same image, named again
  if [[ "${tag}" != "${hash}" && -n "$(image_id "${OUTRIGGER_REPO}:${hash}")" && -z "${OUTRIGGER_IMAGE_FORCE:-}" ]]; then
    log "${ref}: the sources of ${OUTRIGGER_REPO}:${hash}, tagged ${tag}"
    bh tag "${OUTRIGGER_REPO}:${hash}" "${ref}"
    push "${ref}" "${archive}"
    prune_outrigger_archives "${hash}"
    return
  fi
  pick_isolation
  # npm ci inside the build must trust the host's CA bundle (outbound TLS may be intercepted by
  # a proxy whose CA only the host knows). npm reads ${prefix}/etc/npmrc, and the base image's
  # prefix is /usr/local: a directory holding the bundle and an npmrc naming it is mounted
  # read-only over /usr/local/etc for the RUN steps. That directory exists (empty) in the base
  # image; mounting files onto paths that do not exist would leave empty placeholder files in
  # the image's layers (buildah 1.28 creates the mount points), so nothing but the mount is here.
  local mounts=()
  if [[ -s "${HOST_CA}" ]]; then
    mkdir -p "${WORK}/npm-etc"
    cp "${HOST_CA}" "${WORK}/npm-etc/ca-certificates.crt"
    printf 'cafile=/usr/local/etc/ca-certificates.crt\nupdate-notifier=false\n' >"${WORK}/npm-etc/npmrc"
    mounts=(--volume "${WORK}/npm-etc:/usr/local/etc:ro")
  fi
  log "${ref}: buildah build of ${REPO}/Dockerfile (isolation ${ISOLATION})"
  local t0=${SECONDS} nocache=()
  [[ -n "${OUTRIGGER_IMAGE_FORCE:-}" ]] && nocache=(--no-cache)
  bh build --quiet --layers "${nocache[@]}" --pull=never --isolation "${ISOLATION}" --network host \
    --format oci "${mounts[@]}" -f "${REPO}/Dockerfile" -t "${ref}" "${REPO}" >&2 ||
    die "buildah build of the Dockerfile failed (output above)"
  log "${ref}: built in $((SECONDS - t0)) s"
  push "${ref}" "${archive}"
  prune_outrigger_archives "${hash}"
}

# Every source change and every upgrade test makes another 100 MB archive: keep the current
# sources' archive and the newest few others, remove the rest.
KEEP_ARCHIVES=2
prune_outrigger_archives() { # hash tag of the current sources
  local old
  # shellcheck disable=SC2012  # names are ours: outrigger-<tag>.oci.tar
  for old in $(ls -t "${IMAGES_DIR}"/outrigger-*.oci.tar 2>/dev/null | grep -v "/outrigger-$1\.oci\.tar$" |
    tail -n +$((KEEP_ARCHIVES + 1))); do
    rm -f -- "${old}" && log "removed an older archive: ${old##*/}"
  done
}

# --- main ---------------------------------------------------------------------------------

# The index: this run's images, and the previous run's lines for the others (whose archives
# are still there), one per name in a fixed order.
write_index() {
  local index="${IMAGES_DIR}/index" archive ref name
  if [[ -f "${index}" ]]; then
    while read -r archive ref; do
      [[ -n "${archive}" && -n "${ref}" && "${archive}" != \#* ]] || continue
      name="${ref%:*}"
      name="${name##*/}"
      [[ -n "${ENTRY[${name}]:-}" ]] || ENTRY[${name}]="${archive} ${ref}"
    done <"${index}"
  fi
  for name in "${ALL[@]}"; do
    if [[ -n "${ENTRY[${name}]:-}" && -s "${IMAGES_DIR}/${ENTRY[${name}]%% *}" ]]; then
      echo "${ENTRY[${name}]}"
    fi
  done >"${index}.$$"
  mv -f "${index}.$$" "${index}"
}

T0=${SECONDS}
if wanted demo-proxy || wanted log-shipper || wanted outrigger; then ensure_base; fi
if wanted pause; then build_pause; fi
if wanted demo-proxy; then build_proxy; fi
if wanted log-shipper; then build_shipper; fi
if wanted coredns; then build_coredns; fi
if wanted cert-manager; then build_cert_manager; fi
OUTRIGGER_REF=""
if wanted outrigger; then build_outrigger; fi
write_index
log "${WANTED[*]}: ready in $((SECONDS - T0)) s; ${IMAGES_DIR}/index lists them"
if [[ -n "${OUTRIGGER_REF}" ]]; then echo "${OUTRIGGER_REF}"; fi
