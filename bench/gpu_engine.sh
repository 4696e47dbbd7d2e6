#!/usr/bin/env bash
# Issue 13 on one H200: the full server with ONE engine process owning the GPU
# (EMOSTREAM_ENGINE=process) and WORKERS front-end processes (uvicorn: WebSocket, text front
# end, Opus) sending their model calls over shared memory + a Unix socket; the load generator
# on the same host over loopback. Results (JSON + PNG + logs) go to $OUT. No figure from this
# script has been measured yet (written on a 2-core CPU machine, 2026-12-03).
#
# Staging is bench/gpu_loadtest.sh's (same job folders, same two device calls):
#     bench/gpu_loadtest.sh prepare                                   # here, with PyPI access
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt1", carry=[".gpujob/lt1"])
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt2 && bash bench/gpu_engine.sh",
#         carry=[".gpujob/lt2"], timeout_s=600)
#   then commit $OUT's files under bench/results/ (dated names).
#
# What it runs:
#   1. a channel check on the device host (bench/engine_channel.py: round trip, no model);
#   2. closed loop (steady, whole text) at LEVELS (default 250,500,750,1000,1250), each level
#      good when p95 first audio <= 200 ms, no underruns, no errors; server CPU and GPU memory
#      (nvidia-smi) recorded: the issue's bar is >= 1,000 good and the same at >= 2 levels below;
#   3. one stream (level 1): first audio p50 <= 15 ms, p95 <= 30 ms is the bar;
#   4. bursts of BURST replies at once every 4 s (DANMAKU=1): p95 first audio <= 400 ms.
# Admission is on (engine refusals are `busy` errors): a level with errors shows where it
# refused; EMOSTREAM_ENGINE_MAX_UTILIZATION=1.0 turns it off to see the raw ceiling.
#
# Environment: WORKERS (front ends, default 8), PROCS (load-generator processes, default 8),
# DURATION (s per level, default 20), LEVELS, BURST (default 250), NAME (default gpu-engine),
# DANMAKU (default 1), GRAPHS (1: EMOSTREAM_ACOUSTIC_GRAPHS=1, the acoustic model as CUDA
# graphs in the engine process: the multi-process regression should not exist with one
# process; default 1), and any EMOSTREAM_* setting.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/loadtest-out}
RES=/tmp/engine-res
mkdir -p "$OUT" "$RES"
WORKERS=${WORKERS:-8}
PROCS=${PROCS:-8}
DURATION=${DURATION:-20}
LEVELS=${LEVELS:-250,500,750,1000,1250}
BURST=${BURST:-250}
NAME=${NAME:-gpu-engine}
DANMAKU=${DANMAKU:-1}
GRAPHS=${GRAPHS:-1}
export PY=${PY:-python3} PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
cat /tmp/hifigan/hifigan_fp16.pt.part* >/tmp/hifigan_fp16.pt
export EMOSTREAM_VOCODER_CHECKPOINT=${EMOSTREAM_VOCODER_CHECKPOINT:-/tmp/hifigan_fp16.pt}
export EMOSTREAM_EMBEDDED_VOICE=${EMOSTREAM_EMBEDDED_VOICE:-0}
export EMOSTREAM_DEFAULT_VOICE=${EMOSTREAM_DEFAULT_VOICE:-af_heart}
export EMOSTREAM_ACOUSTIC=${EMOSTREAM_ACOUSTIC:-on}
export EMOSTREAM_ENGINE=process
export EMOSTREAM_ACOUSTIC_GRAPHS=$GRAPHS
export EMOSTREAM_MAX_STREAMS=${EMOSTREAM_MAX_STREAMS:-16384}
export READY_TIMEOUT_S=${READY_TIMEOUT_S:-300}
export DEVICE=cuda SERVE_ARGS="--workers $WORKERS"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

{
  date -u +%FT%TZ
  nproc; grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
  echo "engine process; workers $WORKERS; load-generator processes $PROCS; graphs $GRAPHS"
} >"$RES/$NAME-env.txt" 2>&1
cat "$RES/$NAME-env.txt"
PYTHONPATH="$PWD/server:$PWD:$PYTHONPATH" "$PY" -c \
  'import emostream.transport.app, emostream.engine.engine_process, loadtest.cli, websockets, uvicorn, opuslib_next' \
  || { echo "missing imports: stage .gpujob/lt1 + lt2 (bench/gpu_loadtest.sh)"; exit 3; }

# 1. The channel alone on this host.
PYTHONPATH="$PWD/server:$PYTHONPATH" "$PY" bench/engine_channel.py --n 2000 \
  -o "$RES/$NAME-channel.json" >/dev/null || echo "channel bench failed: $?"

LABEL="H200, engine process + $WORKERS front-end workers, graphs $GRAPHS, voice $EMOSTREAM_DEFAULT_VOICE, $PROCS load-generator processes, one host"
nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 2 \
  >"$RES/$NAME-nvidia-smi.csv" 2>&1 &
SMI=$!
trap 'kill $SMI 2>/dev/null || true' EXIT

# 2. Closed loop at the levels; 3. one stream.
LABEL="$LABEL" bench/loadtest.sh "$RES" "$NAME-sweep" --sweep "$LEVELS" --duration "$DURATION" \
  --ramp 3 --procs "$PROCS" --prep-s 10 --settle-s 3 --utterance-timeout 60 -q \
  || echo "sweep failed: $?"
LABEL="$LABEL; one stream" bench/loadtest.sh "$RES" "$NAME-one" --sweep 1 --duration 30 -q \
  || echo "one stream failed: $?"
# 4. Bursts (each reply its own stream).
if [ "$DANMAKU" = 1 ]; then
  LABEL="$LABEL; bursts" timeout 150 bench/loadtest.sh "$RES" "$NAME-bursts" --pattern bursts \
    --sweep "$BURST" --burst-interval 4 --duration 16 --settle-s 2 -q || echo "bursts failed: $?"
fi
kill $SMI 2>/dev/null || true

"$PY" - "$RES" "$NAME" <<'PYEOF'
import csv, json, pathlib, sys
res, name = pathlib.Path(sys.argv[1]), sys.argv[2]
for p in sorted(res.glob(name + "-*.json")):
    r = json.load(open(p))
    for lv in r.get("levels", []):
        fa, srv = lv["first_audio_ms"], lv["server"]
        print(f"{p.stem} level {lv['level']:g}: p50 {fa['p50']} p95 {fa['p95']} ms,"
              f" underruns/min {lv['underruns']['per_stream_minute']}, errors {lv['errors']},"
              f" server cpu {srv.get('cpu_percent', {}).get('mean')}%, good {lv['good']}")
used = [float(row[1].split()[0]) for row in csv.reader(open(res / f"{name}-nvidia-smi.csv"))
        if len(row) > 1 and row[1].strip().split()[0].replace('.', '').isdigit()]
print("GPU memory used, max MiB:", max(used) if used else "n/a")
PYEOF
cp "$RES/$NAME"-*.json "$RES/$NAME"-*.png "$OUT/" 2>/dev/null || true
tar -czf "$OUT/$NAME-logs.tar.gz" -C "$RES" $(cd "$RES" && ls "$NAME"-*.log "$NAME"-*.txt "$NAME"-*.csv 2>/dev/null)
ls -la "$OUT"
