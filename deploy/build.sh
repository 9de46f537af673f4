#!/usr/bin/env bash
# Builds Tally's image (deploy/Containerfile) with podman: on a base given as BASE, or else on
# one bootstrapped from the Debian mirror (deploy/base.sh). Where the npm registry is reached
# through a proxy that re-signs it, the machine's CA bundle is mounted into the build. Prints
# the image's name.
set -euo pipefail
cd "$(dirname "$0")/.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/podman/containers.conf}"
image="${IMAGE:-localhost/tally:dev}"
base="${BASE:-$(deploy/base.sh)}"
cafile="${NPM_CAFILE:-/etc/ssl/certs/ca-certificates.crt}"
ca=()
[[ -f "$cafile" ]] && ca=(--volume "$cafile:/etc/ssl/host-ca.crt:ro" --build-arg NPM_CAFILE=/etc/ssl/host-ca.crt)
podman build --network host --build-arg "BASE=$base" "${ca[@]}" -f deploy/Containerfile -t "$image" . >&2
echo "$image"
