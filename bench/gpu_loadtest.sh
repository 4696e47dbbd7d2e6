#!/usr/bin/env bash
# Load test on the H200 machine: `emostream serve --device cuda` and the load generator on
# the same host, over loopback. Results (JSON + PNG + logs) go to $OUT.
#
# Step 1, here (a machine with PyPI/Debian access and the dev .venv), from the repo root:
#     bench/gpu_loadtest.sh prepare
#   writes git-ignored job folders, each small enough to travel beside the tracked tree once
#   what the GPU run does not need is moved out of the working tree (step 2):
#     .gpujob/lt1: cp312 manylinux wheels of the server's deps that the H200 image lacks
#                  (versions from the local .venv), Debian's libopus0, piper's espeak-ng
#                  bridge trimmed to English (the acoustic voices' G2P), the Mandarin front
#                  end (jieba, pypinyin, misaki.zh, cn2an: the voices warm it when they load)
#                  as site-zh.tar.xz, py-spy's static binary xz'd (py-spy.xz, 2.0 MB: the
#                  profiles of bench/gpu_engine_probe.sh; stage puts it at
#                  /tmp/site/bin/py-spy), and the first part of the HiFi-GAN universal
#                  generator stored as fp16 (the engine runs fp16 anyway), xz-compressed;
#     .gpujob/lt2: the rest of it (more folders when they would not fit: PARTS, LITE_AWAY).
#   and prints what each call will send (`bench/gpu_loadtest.sh size` prints it again).
#   The embedded Piper voice (58 MB) stays home: the GPU server runs with
#   EMOSTREAM_EMBEDDED_VOICE=0 and an EmoStream FS2 speaker as default voice.
# Step 2, the device tool, one call per folder back to back (the machine keeps /tmp for
#   ~30 s), the last one with the run. Before them, move out of the tree the corpus shards,
#   the light vocoder (unused on cuda; LITE_AWAY=0 keeps it, and prepare then makes more
#   folders) and bench/results (7 MB of past results; RESULTS_AWAY=0 counts them as
#   travelling), check that each line of `size` says ok, and put them back afterwards
#   (prepare may run before or after the move):
#     git ls-files -z 'models/corpus/v1/*.npz.xz' 'models/corpus/plan/*' bench/results \
#       models/vocoder/emostream-lite-vocoder-v0.2.onnx | tar --null -T - --remove-files \
#       -cf /tmp/gpujob-away.tar && bench/gpu_loadtest.sh size
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt1", carry=[".gpujob/lt1"])
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt2 && bash bench/gpu_loadtest.sh",
#         carry=[".gpujob/lt2"], timeout_s=600)
#     tar -xf /tmp/gpujob-away.tar      # (not `git checkout`: it would drop edits there)
#   then commit $OUT's gpu-*.json / gpu-*.png under bench/results/ (dated names).
#
# Environment: DEVICE (default cuda; cpu gives the 16-core CPU figure), WORKERS (server
# processes, default 1), FINDMAX_S (time budget for the find-max search, default 330),
# DURATION (s per level, default 20), PROCS (load-generator processes, default 8),
# START (first level, default 16), NAME (result prefix, default gpu), DANMAKU (1: run
# the burst pattern at the largest good N afterwards, default 1), MPS (1: CUDA MPS for
# several workers), and any EMOSTREAM_* setting (e.g. EMOSTREAM_SWITCH_INTERVAL_MS).
set -euo pipefail
cd "$(dirname "$0")/.."

travelling_tree() {  # bytes of the working tree that a device call sends (see `size`)
  local away=(-e '^models/corpus/v1/.*\.npz\.xz$' -e '^models/corpus/plan/')
  [ "${LITE_AWAY:-1}" = 1 ] && away+=(-e '^models/vocoder/emostream-lite-vocoder-v0\.2\.onnx$')
  [ "${RESULTS_AWAY:-1}" = 1 ] && away+=(-e '^bench/results/')
  # (files already moved away are missing: du skips them, and its status is not the answer)
  { git ls-files -z; git ls-files -z --others --exclude-standard; } | grep -zv "${away[@]}" \
    | { xargs -0 du -cb 2>/dev/null || true; } | awk '$2 == "total" {s += $1} END {print s}'
}

if [ "${1:-}" = "prepare" ]; then
  PY=${PY:-.venv/bin/python}
  A=.gpujob/lt1
  rm -rf .gpujob/lt[0-9]*; mkdir -p "$A/whl" "$A/deb" "$A/site"
  pkgs=()
  for n in starlette uvicorn websockets httptools python-multipart opuslib_next soxr \
           soundfile cffi pycparser msgspec lameenc; do
    v=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$n")
    pkgs+=("$n==$v")
  done
  echo "== wheels: ${pkgs[*]}"
  plats=()
  for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64; do
    plats+=(--platform "$p")
  done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plats[@]}" -d "$A/whl" "${pkgs[@]}"
  (cd "$A/deb" && apt-get download libopus0 >/dev/null)
  # piper's espeak-ng bridge (a plain C extension, no Python ABI tag) with English data only.
  src=$("$PY" -c 'import pathlib, piper; print(pathlib.Path(piper.__file__).parent)')
  mkdir -p "$A/site/piper/tashkeel" "$A/site/piper/espeak-ng-data"
  cp "$src"/*.py "$src"/espeakbridge.so "$A/site/piper/"
  cp "$src"/tashkeel/*.py "$A/site/piper/tashkeel/"
  for f in phontab phonindex phondata intonations en_dict lang voices; do
    cp -r "$src/espeak-ng-data/$f" "$A/site/piper/espeak-ng-data/"
  done
  # The Mandarin front end: the EmoStream voices warm it when they load (jieba, pypinyin,
  # misaki.zh, cn2an; not in the H200 image), trimmed to what that uses, pure Python, xz.
  sp=$("$PY" -c 'import pathlib, jieba; print(pathlib.Path(jieba.__file__).parent.parent)')
  (cd "$sp" && tar -cf - --exclude=__pycache__ --exclude='*.pyi' --exclude='*_test.py' \
     --exclude=__pyinstaller --exclude=tools jieba/__init__.py jieba/_compat.py jieba/dict.txt \
     jieba/finalseg/__init__.py jieba/finalseg/prob_emit.py jieba/finalseg/prob_start.py \
     jieba/finalseg/prob_trans.py pypinyin misaki/__init__.py misaki/transcription.py \
     misaki/zh.py cn2an proces ordered_set) | xz -T1 -9 >"$A/site-zh.tar.xz"
  # py-spy (bench/gpu_engine_probe.sh): the wheel's static binary (the .venv's version, else
  # 0.4.3), xz'd: 8.1 -> 2.0 MB.
  v=$("$PY" -c "import importlib.metadata as m; print(m.version('py-spy'))" 2>/dev/null || echo 0.4.3)
  spy=$(mktemp -d)
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${plats[@]}" -d "$spy" "py-spy==$v"
  "$PY" - "$spy" "$A/py-spy.xz" <<'PYEOF'
import lzma, pathlib, sys, zipfile
whl = next(pathlib.Path(sys.argv[1]).glob("py_spy-*.whl"))
with zipfile.ZipFile(whl) as z:
    data = z.read(next(n for n in z.namelist() if n.endswith("/scripts/py-spy")))
pathlib.Path(sys.argv[2]).write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
PYEOF
  rm -rf "$spy"
  "$PY" - "$A/hifigan_fp16.pt" <<'PYEOF'
import sys, torch
from emostream.networks.hifigan import HifiGan
raw = torch.load(HifiGan.packaged_checkpoint("universal"), map_location="cpu", weights_only=True)
state = raw["generator"] if "generator" in raw else raw
torch.save({k: v.half() if v.is_floating_point() else v for k, v in state.items()}, sys.argv[1])
PYEOF
  xz -T1 -6 "$A/hifigan_fp16.pt"  # 27.9 -> 25.2 MB
  # The checkpoint in parts, so that lt1 (which also holds the rest), lt2, ... are about
  # the same size and each fits beside the tree (PARTS: how many; default the fewest).
  ckpt=$(stat -c %s "$A/hifigan_fp16.pt.xz")
  rest=$(du -sb "$A" | cut -f1); rest=$((rest - ckpt))
  room=$(( (63 << 20) - $(travelling_tree) ))  # 1 MiB kept free
  n=${PARTS:-$(( (ckpt + rest + room - 1) / room ))}; n=$(( n > 1 ? n : 1 ))
  each=$(( (ckpt + rest + n - 1) / n ))
  at=0
  for i in $(seq 1 "$n"); do
    size=$(( i == 1 ? each - rest : each )); size=$(( size > 0 ? size : 0 ))
    mkdir -p ".gpujob/lt$i"
    dd if="$A/hifigan_fp16.pt.xz" of=".gpujob/lt$i/hifigan_fp16.pt.xz.part$(printf %02d $((i - 1)))" \
      bs=1M iflag=skip_bytes,count_bytes skip="$at" count="$size" status=none
    at=$((at + size))
  done
  [ "$at" -ge "$ckpt" ] || { echo "checkpoint split short: $at of $ckpt"; exit 1; }
  rm "$A/hifigan_fp16.pt.xz"
  set -- size
fi
if [ "${1:-}" = "size" ]; then
  # What travels with each call: tracked files (less those moved away) + untracked ones that
  # git does not ignore + the carried folder; the device tool's limit is 64 MiB.
  tree=$(travelling_tree)
  echo "== tree that travels, without the corpus shards$([ "${LITE_AWAY:-1}" = 1 ] && echo \
    ' and the light vocoder (unused on cuda; LITE_AWAY=0 keeps it)'): $tree bytes"
  for d in .gpujob/lt[0-9]*; do
    n=$(du -sb "$d" | cut -f1)
    echo "   + $d: $n bytes = $((tree + n)) of $((64 << 20))" \
      "$([ $((tree + n)) -lt $((64 << 20)) ] && echo ok || echo 'TOO LARGE')"
  done
  exit 0
fi

# ---- on the GPU machine ---------------------------------------------------------------
OUT=${OUT:-/tmp/loadtest-out}   # what comes back: at most 8 files (device tool)
RES=/tmp/loadtest-res           # everything, kept on the machine while it stays warm
mkdir -p "$OUT" "$RES"
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-1}
FINDMAX_S=${FINDMAX_S:-330}
DURATION=${DURATION:-20}
PROCS=${PROCS:-8}
START=${START:-16}
NAME=${NAME:-gpu}
DANMAKU=${DANMAKU:-1}
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
if [ "${1:-}" = "stage" ]; then  # unpack a job folder into /tmp (kept while warm)
  install_from "$2"
  mkdir -p /tmp/site /tmp/hifigan
  [ -d "$2/site" ] && cp -r "$2"/site/. /tmp/site/
  for t in "$2"/site-*.tar.xz; do
    [ -f "$t" ] && python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="data")' "$t" /tmp/site
  done
  cp "$2"/hifigan_fp16.pt*.part* /tmp/hifigan/ 2>/dev/null || true
  if [ -f "$2/py-spy.xz" ]; then  # bench/gpu_engine_probe.sh's profiler
    mkdir -p /tmp/site/bin
    python3 -c 'import lzma, sys; open(sys.argv[2], "wb").write(lzma.open(sys.argv[1]).read())' \
      "$2/py-spy.xz" /tmp/site/bin/py-spy && chmod +x /tmp/site/bin/py-spy
  fi
  ls /tmp/site /tmp/hifigan
  exit 0
fi
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
# The HiFi-GAN checkpoint's parts (xz) -> /tmp/hifigan_fp16.pt
cat /tmp/hifigan/hifigan_fp16.pt.xz.part* | "${PY:-python3}" -c \
  'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer)' \
  >/tmp/hifigan_fp16.pt
export EMOSTREAM_VOCODER_CHECKPOINT=${EMOSTREAM_VOCODER_CHECKPOINT:-/tmp/hifigan_fp16.pt}
export EMOSTREAM_EMBEDDED_VOICE=${EMOSTREAM_EMBEDDED_VOICE:-0}
export EMOSTREAM_DEFAULT_VOICE=${EMOSTREAM_DEFAULT_VOICE:-af_heart}
export EMOSTREAM_ACOUSTIC=${EMOSTREAM_ACOUSTIC:-on}
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

{
  date -u +%FT%TZ
  nproc; grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "${PY:-python3}" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
  echo "ulimit -n $(ulimit -n); workers $WORKERS; load-generator processes $PROCS"
} >"$RES/$NAME-env.txt" 2>&1
cat "$RES/$NAME-env.txt"
PYTHONPATH="$PWD/server:$PWD:${PYTHONPATH:-}" "${PY:-python3}" -c \
  'import emostream.transport.app, loadtest.cli, websockets, uvicorn, opuslib_next, piper.phonemize_espeak, jieba, pypinyin, misaki.zh' \
  || { echo "missing imports: run 'bench/gpu_loadtest.sh prepare' and stage .gpujob/lt1 + lt2"; exit 3; }

export PY=${PY:-python3} DEVICE SERVE_ARGS="--workers $WORKERS"
export EMOSTREAM_MAX_STREAMS=${EMOSTREAM_MAX_STREAMS:-16384}
export READY_TIMEOUT_S=${READY_TIMEOUT_S:-240}
# MPS=1: run the server's processes under CUDA MPS, so their kernels share the GPU at once
# instead of taking turns (time slices) as separate contexts.
MPS=${MPS:-0}
if [ "$MPS" = 1 ]; then
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d || true
  if ! timeout 60 "$PY" -c 'import torch; torch.zeros(1, device="cuda"); print("MPS client ok")'; then
    echo quit | nvidia-cuda-mps-control || true
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    echo "MPS unusable here: running without it"; MPS=0
  fi
fi
LABEL="H200 $DEVICE, $(nproc) CPU cores, server ($WORKERS worker process(es), MPS $MPS, GIL switch ${EMOSTREAM_SWITCH_INTERVAL_MS:-5} ms, voice $EMOSTREAM_DEFAULT_VOICE) + $PROCS load-generator processes on one host"
# GPU memory of every process on the card, every 2 s (the server's gauge is per start-up).
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 2 \
  >"$RES/$NAME-nvidia-smi.csv" 2>&1 &
SMI=$!
trap 'kill $SMI 2>/dev/null || true; [ "$MPS" = 1 ] && { echo quit | nvidia-cuda-mps-control; } || true' EXIT

# 1. Closed loop: the largest N with p95 first audio <= 200 ms, no underruns, no errors.
LABEL="$LABEL" bench/loadtest.sh "$RES" "$NAME-findmax" --find-max --start "$START" \
  --max-level 8192 --duration "$DURATION" --ramp 3 --procs "$PROCS" --prep-s 10 \
  --max-total-s "$FINDMAX_S" --settle-s 3 --utterance-timeout 60 -q || echo "find-max failed: $?"

# 2. Bursts of replies at the largest good N, each its own stream (--pattern bursts, called
#    danmaku before 2026-12-03; single generator process, so at most 512).
if [ "$DANMAKU" = 1 ]; then
  BEST=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["find_max"]["largest_good"])' \
    "$RES/$NAME-findmax.json" 2>/dev/null || echo 0)
  B=$(( BEST > 512 ? 512 : (BEST < 8 ? 8 : BEST) ))
  LABEL="$LABEL; bursts" timeout 150 bench/loadtest.sh "$RES" "$NAME-bursts" --pattern bursts \
    --sweep "$((B / 4)),$((B / 2)),$B" --burst-interval 4 --duration 12 --settle-s 2 -q \
    || echo "bursts failed: $?"
fi
kill $SMI 2>/dev/null || true

"$PY" - "$RES" "$NAME" <<'PYEOF'
import json, pathlib, sys
for p in sorted(pathlib.Path(sys.argv[1]).glob(sys.argv[2] + "-*.json")):
    r = json.load(open(p))
    for lv in r["levels"]:
        fa, srv = lv["first_audio_ms"], lv["server"]
        print(f"{p.stem} level {lv['level']:g}: p50 {fa['p50']} p95 {fa['p95']} p99 {fa['p99']} ms,"
              f" underruns/min {lv['underruns']['per_stream_minute']}, errors {lv['errors']},"
              f" server cpu {srv.get('cpu_percent', {}).get('mean')}%,"
              f" gpu mem {srv.get('gpu_memory_bytes_max')}, good {lv['good']}")
    if "find_max" in r:
        print(p.stem, "largest good:", r["find_max"]["largest_good"])
PYEOF
# Back through $OUT (8 files at most): reports and plots, and one archive of the logs.
cp "$RES/$NAME"-*.json "$RES/$NAME"-*.png "$OUT/" 2>/dev/null || true
tar -czf "$OUT/$NAME-logs.tar.gz" -C "$RES" $(cd "$RES" && ls "$NAME"-*.log "$NAME"-*.txt "$NAME"-*.csv 2>/dev/null)
ls -la "$OUT"
