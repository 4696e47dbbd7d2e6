#!/usr/bin/env bash
# Teacher corpus on the GPU host's 16 CPU cores (the GPU itself is idle here).
# Prepared on the developer machine (see models/corpus/README.md, "Run on the GPU host"):
#   G=/work/main/.gpujob/acoustic   (ignored by git; passed with carry: [".gpujob/acoustic"])
#   $G/k.xz           Kokoro int8 ONNX, xz -9e (57.7 MiB: the 92 MB model does not fit the
#                     64 MiB transfer limit otherwise)
#   $G/plan/          `corpus_cli pack` output: jobs.jsonl.xz, speakers.json, job_styles.npy
#   $G/whl/           soxr wheel (cp312 manylinux)
#   $G/server/        emostream/{__init__,models/{__init__,mel}}.py
#   $G/train/         train/*.py (the training package, beside the server's)
#   $G/gpu_corpus.sh  this file
# Device command:  bash .gpujob/acoustic/gpu_corpus.sh [BUDGET_S] [WORKERS] [SKIP]
set -euo pipefail
G=$(cd "$(dirname "$0")" && pwd)
BUDGET=${1:-450}
WORKERS=${2:-15}
SKIP=${3:-0}
OUTDIR=${OUT:-/tmp/out}
mkdir -p "$OUTDIR"
python3 -c "import soxr" 2>/dev/null || python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "$G"/whl/*.whl
export PYTHONPATH=/tmp/site:$G/server:$G PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
python3 - "$G" <<'PY'
import hashlib, lzma, sys, time
from pathlib import Path
g = Path(sys.argv[1]); dst = Path("/tmp/kokoro.onnx"); t = time.time()
if not dst.exists():
    dst.write_bytes(lzma.decompress((g / "k.xz").read_bytes()))
print("model", hashlib.sha256(dst.read_bytes()).hexdigest()[:16], f"{time.time()-t:.1f}s")
PY
nproc; python3 -c "import numpy, onnxruntime, soxr; print(numpy.__version__, onnxruntime.__version__)"
python3 -m train.corpus_cli synth --plan "$G/plan" --model /tmp/kokoro.onnx \
  --out "$OUTDIR" --workers "$WORKERS" --budget "$BUDGET" --skip "$SKIP" \
  --prefix "gpu$(date +%Y%m%d%H%M)-s$SKIP" 2>&1 | tee "$OUTDIR/synth.log"
ls -la "$OUTDIR"
