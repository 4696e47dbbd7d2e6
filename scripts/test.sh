#!/usr/bin/env bash
# README command 2: set up the dev environment (if needed) and run every test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --dev
if [ -f client_js/ci.sh ]; then
  bash client_js/ci.sh
fi
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
