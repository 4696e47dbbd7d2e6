#!/usr/bin/env bash
# README command 1: set up (if needed) and serve with the embedded CPU voice.
# Extra arguments go to `emostream serve` (e.g. --port 8080 --host 0.0.0.0).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/emostream serve "$@"
