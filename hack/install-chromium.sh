#!/usr/bin/env bash
# Installs Debian's chromium for the HTML report test of `dovetail cost
# --html` (internal/cli/cost), which renders the report headless and fails
# without it. Called by `make test`; a no-op when chromium is on PATH.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-chromium: chromium is not installed and apt-get is not available; install Chromium so that 'chromium' is on PATH" >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
echo "install-chromium: installing Debian's chromium (for the cost --html test)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
