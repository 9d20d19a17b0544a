#!/usr/bin/env bash
# Checks examples/deploy/ (Kubernetes YAML, systemd unit, env file, drop-in,
# Dockerfiles) against the built pushprof-sidecar and preload library, then
# breaks copies of it in known ways and expects each to be caught.
set -euo pipefail
: "${PUSHPROF_BUILD_DIR:?set PUSHPROF_BUILD_DIR to the build directory}"
: "${PUSHPROF_SOURCE_DIR:=$(cd "$(dirname "$0")/../../.." && pwd)}"
export PUSHPROF_BUILD_DIR PUSHPROF_SOURCE_DIR
if ! python3 -c 'import yaml' 2>/dev/null; then
  echo "FAIL: python3-yaml is missing (bash tests/deps.sh installs it)" >&2
  exit 1
fi
exec python3 "$PUSHPROF_SOURCE_DIR/tests/integration/deploy/check_deploy.py" --self-test \
  "$PUSHPROF_SOURCE_DIR/examples/deploy"
