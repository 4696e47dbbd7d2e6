#!/usr/bin/env bash
# One ≤9-minute training window on the H200 (NOT RUN YET as of 2026-12-02).
# Prepare (developer machine):
#   G=/work/main/.gpujob/acoustic_train; mkdir -p $G/server/emostream/{models,text,voices} $G/train
#   copy server/emostream/{__init__,models/{__init__,acoustic,mel},text/{__init__,phonemes},
#        voices/{__init__,base}}.py under $G/server and train/{__init__,corpus,train}.py under $G
#   cp -r models/corpus/v1 $G/corpus            (16 MB)
#   cp models/recipes/gpu_train.sh $G/
#   previous window's checkpoint (if any): cp last.pt $G/run/   (≈190 MB with optimiser state:
#   too big to carry: keep the run on the machine within one warm lease, or carry
#   model_fp16.pt only and restart the optimiser — see the model card)
# Device: bash .gpujob/acoustic_train/gpu_train.sh 500      (carry [".gpujob/acoustic_train"])
set -euo pipefail
G=$(cd "$(dirname "$0")" && pwd)
BUDGET=${1:-500}
OUTDIR=${OUT:-/tmp/out}
mkdir -p "$OUTDIR" "$G/run"
export PYTHONPATH=$G/server:$G PYTHONUNBUFFERED=1
python3 -m train.train --corpus "$G/corpus" --out "$G/run" --budget "$BUDGET" \
  --eval-every 250 --save-every 1000 2>&1 | tee "$OUTDIR/train.log"
cp "$G/run/model_fp16.pt" "$G"/run/summary-*.json "$OUTDIR/"
