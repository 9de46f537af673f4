#!/usr/bin/env bash
# A Debian bookworm base image made from the Debian mirror the machine already uses, for
# machines that reach no image registry: debootstrap a minimal root file system and import
# it as localhost/tally-base:bookworm. Needs root, debootstrap and podman.
set -euo pipefail
image="${1:-localhost/tally-base:bookworm}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
if podman image exists "$image"; then echo "$image"; exit 0; fi
rootfs="$(mktemp -d)"
trap 'rm -rf "$rootfs"' EXIT
debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >&2
tar -C "$rootfs" -c . | podman import - "$image" >&2
echo "$image"
