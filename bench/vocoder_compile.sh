#!/usr/bin/env bash
# torch.compile for the engine's vocoder on one GPU (issue 13): bench/vocoder_compile.py with the
# HiFi-GAN checkpoint staged as for bench/gpu_engine.sh (bench/gpu_loadtest.sh stage .gpujob/lt1,
# then lt2: /tmp/hifigan parts -> bench/gpu_engine_env.sh), JSON + log in $OUT. Arguments go to
# the script (--random-weights needs no staging; --modes default, --budget-s 540, ... : --help).
set -euo pipefail
cd "$(dirname "$0")/.."
export PY=${PY:-python3} DEVICE=cuda GRAPHS=1 PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/vocompile-out}
mkdir -p "$OUT"
case " $* " in *" --random-weights "*) ;; *) . bench/gpu_engine_env.sh ;; esac
"$PY" bench/vocoder_compile.py ${EMOSTREAM_VOCODER_CHECKPOINT:+--checkpoint "$EMOSTREAM_VOCODER_CHECKPOINT"} \
  --out "$OUT/vocoder-compile.json" "$@" 2>&1 | tee "$OUT/vocoder-compile.log"
