#!/usr/bin/env bash
# README command 2: set up the dev environment (if needed) and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
if [ -f client_js/ci.sh ]; then
  bash client_js/ci.sh
fi
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
if [ $# -eq 0 ]; then
  # The Pipecat plugin's tests, in a venv of their own: pipecat-ai pins soxr, soundfile and
  # protobuf below the server's (plugins/README.md). They drive a server on loopback.
  [ -x .venv-pipecat/bin/python ] || "${PYTHON:-python3}" -m venv .venv-pipecat
  # pipecat-ai[elevenlabs,cartesia]: its own services against the compatible WebSockets.
  .venv-pipecat/bin/python -m pip install -q -e ".[pipecat]" "pipecat-ai[elevenlabs,cartesia]" \
    "pytest>=8" "pytest-asyncio>=0.23" "httpx>=0.27" "jsonschema>=4.18"
  .venv-pipecat/bin/python -m pytest -q -p no:cacheprovider tests/plugins/test_pipecat.py \
    tests/plugins/test_pipecat_compat.py || status=$?
fi
exit $status
