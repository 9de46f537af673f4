#!/usr/bin/env bash
# What `npm run test:deploy` needs beyond node_modules: podman with runc, podman-compose and
# debootstrap, from Debian's packages; npm runs this as its "pre" script. Idempotent: when
# everything is present it installs nothing and prints nothing. Containers run as root here.
set -euo pipefail
missing=()
for tool in podman runc podman-compose debootstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "npm run test:deploy runs containers as root; as root, install: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing deployment test prerequisites: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
