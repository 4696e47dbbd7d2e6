#!/usr/bin/env bash
# Set up EmoStream on a fresh Debian/Ubuntu machine: system libraries and a virtual
# environment at .venv/ in the repo root. Idempotent; safe to run again.
#   scripts/setup.sh           server only
#   scripts/setup.sh --dev     + test tools, torch (CPU build), redis-server, chromium
#   scripts/setup.sh --gpu     the server for a GPU host: + torch from PyPI (CUDA from the driver)
# The Dockerfile installs the same system libraries and extras (tests/test_dockerfile.py).
set -euo pipefail
cd "$(dirname "$0")/.."
DEV=0
GPU=0
[ "${1:-}" = "--dev" ] && DEV=1
[ "${1:-}" = "--gpu" ] && GPU=1
# [media]: PyAV (FFmpeg) for response_format "aac" and WebM/MP4 reference clips (browsers)
server_extras=media
gpu_extras=gpu,redis,media

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_pkgs=(libopus0 libsndfile1)
[ $DEV -eq 1 ] && apt_pkgs+=(redis-server pocketsphinx-testdata alsa-utils codec2-examples asterisk-core-sounds-en-wav chromium nodejs npm)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
# Node and npm may come from elsewhere than Debian (e.g. a preinstalled node).
if [ $DEV -eq 1 ] && command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))
if [ ${#missing[@]} -gt 0 ]; then
  echo "== apt-get install ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ $DEV -eq 1 ]; then
  # A CPU build of torch; a bare 'torch' requirement could pull a multi-GB CUDA build.
  .venv/bin/python -m pip install -q "torch==${TORCH_VERSION:-2.13.0}"
  # livekit: the LiveKit Agents plugin's tests (tests/plugins). Pipecat's run in a venv of
  # their own (scripts/test.sh): pipecat-ai pins soxr, soundfile and protobuf below the server's.
  # ray: the cluster tests (tests/cluster: a local two-node Ray cluster with Serve).
  .venv/bin/python -m pip install -q -e ".[dev,redis,train,livekit,livekit-elevenlabs,ray]"
  # Reference implementation for the speaker-encoder parity tests; its own requirements
  # (torch, librosa, webrtcvad) come through the extras above.
  .venv/bin/python -m pip install -q --no-deps "resemblyzer==0.1.4"
  # Kokoro's torch network for the GPU teacher (train.kokoro_torch); --no-deps: its
  # declared requirements pull misaki[en] + spaCy, unused when the teacher is fed token ids.
  .venv/bin/python -m pip install -q --no-deps "kokoro==0.9.4"
elif [ $GPU -eq 1 ]; then
  .venv/bin/python -m pip install -q -e ".[$gpu_extras]"
else
  .venv/bin/python -m pip install -q -e ".[$server_extras]"
fi
echo "== setup done (.venv)"
