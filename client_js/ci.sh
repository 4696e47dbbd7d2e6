#!/usr/bin/env bash
# CI for the browser client: install (npm ci from package-lock.json; Debian chromium if
# missing), then node unit tests and the end-to-end test in headless Chromium against the
# real server (python -m emostream serve, from <repo>/.venv unless EMOSTREAM_PYTHON is set).
#   client_js/ci.sh              unit + e2e
#   client_js/ci.sh --unit       unit tests only
# Environment: EMOSTREAM_E2E_SERVER=real|fake|auto (default real here), CHROMIUM_PATH,
# EMOSTREAM_PYTHON, EMOSTREAM_E2E_ATTEMPTS (default 3). Artefacts: <repo>/artifacts/client_js/.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "== apt-get install nodejs npm"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "client_js needs Node.js >= 20 (playwright-core); found $(node --version)" >&2
  exit 1
fi

npm ci --no-audit --no-fund --loglevel=error
node scripts/vendor.mjs --check
node scripts/schema.mjs --check  # src/protocol-schema.js is what the protocol schema makes

echo "== client_js unit tests"
node --test --test-reporter=spec test/unit/*.test.mjs

[ "${1:-}" = "--unit" ] && exit 0

if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null; then
  echo "== apt-get install chromium"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

echo "== client_js end-to-end test (headless Chromium, ${EMOSTREAM_E2E_SERVER:-real} server)"
EMOSTREAM_E2E_SERVER=${EMOSTREAM_E2E_SERVER:-real} node --test --test-reporter=spec test/e2e.test.mjs

echo "== /live page and rooms end to end (headless Chromium, real server, fake VTube Studio)"
EMOSTREAM_E2E_SERVER=${EMOSTREAM_E2E_SERVER:-real} node --test --test-reporter=spec test/live.e2e.test.mjs
