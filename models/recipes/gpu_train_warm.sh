#!/usr/bin/env bash
# One training window on the H200 that continues the shipped checkpoint (weights-only warm
# start: the optimiser state is too big to carry between leases). Run from the repo root:
#   device run: bash models/recipes/gpu_train_warm.sh [BUDGET_S]      (no carry needed)
# Comes back in $OUT: train.log, summary-*.json, model_fp16.pt.a? (cat them back together).
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
INIT=${INIT:-models/acoustic/emostream-fs2-v0.2-fp16.pt}
export PYTHONPATH=$PWD/server PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/nvidia-smi.txt"
python3 -m emostream.train.train --corpus models/corpus/v1 --out /tmp/acoustic-warm \
  --init "$INIT" --budget "${1:-200}" --eval-every 500 --save-every 100000 > "$OUT/train.log" 2>&1
echo "train exit $?"; tr '\r' '\n' < "$OUT/train.log" | grep -E "warm|stopped" | tail -2
cp /tmp/acoustic-warm/summary-*.json "$OUT/"
split -b 15M /tmp/acoustic-warm/model_fp16.pt "$OUT/model_fp16.pt."
