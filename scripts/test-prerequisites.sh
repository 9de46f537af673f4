#!/usr/bin/env bash
# What `npm test` needs beyond node_modules; npm runs this as the "pretest" script, so the
# README's `npm ci && npm test` works on a fresh Debian machine and .ci/run needs no set-up of its own.
# Idempotent: when everything is present it installs nothing and prints nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages the suite drives but npm cannot provide:
#   kcat     - its librdkafka mock cluster is the Kafka-protocol broker of the Kafka tests;
#   chromium - /usr/bin/chromium, the browser playwright-core drives in test/e2e/graphiql.test.ts
#              (playwright-core downloads no browser of its own).
missing=()
command -v kcat >/dev/null 2>&1 || missing+=(kcat)
[ -x /usr/bin/chromium ] || missing+=(chromium)

if [ "${#missing[@]}" -gt 0 ]; then
  # apt-get needs root: run it directly as root, through sudo otherwise, and when neither is
  # possible say exactly what to install rather than let the tests fail later on a missing binary.
  if [ "$(id -u)" -eq 0 ]; then
    as_root=()
  elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
  else
    echo "test prerequisites missing: ${missing[*]}. Install them as root, then run npm test again:" >&2
    echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "installing test prerequisites: ${missing[*]}"
  # noninteractive: no debconf prompt may stop an unattended run.
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# The integration tests need PostgreSQL on 127.0.0.1:5432 and Redis on 127.0.0.1:6379;
# .ci/services starts whichever is down (silent when both are up).
.ci/services
