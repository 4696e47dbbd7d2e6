#!/usr/bin/env bash
# Issue 13 on one H200: the full server with ONE engine process owning the GPU
# (EMOSTREAM_ENGINE=process) and WORKERS front-end processes (uvicorn: WebSocket, text front
# end, Opus) sending their model calls over shared memory + a Unix socket; the load generator
# on the same host over loopback. Results (JSON + PNG + logs) go to $OUT. No figure from this
# script has been measured on a GPU yet; its plumbing was dry-run on the 2-core CPU machine
# (DEVICE=cpu, 2026-12-03).
#
# Staging is bench/gpu_loadtest.sh's (its header: job folders .gpujob/lt1, lt2, what to move
# out of the tree first, `size` to check what each call sends, and how to put it back):
#     bench/gpu_loadtest.sh prepare                                   # here, with PyPI access
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt1", carry=[".gpujob/lt1"])
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt2 && bash bench/gpu_engine.sh",
#         carry=[".gpujob/lt2"], timeout_s=600)
#   A light-vocoder run (EMOSTREAM_VOCODER=lite) needs only lt1: stage it and run in one call
#   (bench/results/2026-12-06-h100-engine-run11.md has the command).
#   then commit $OUT's files under bench/results/ (dated names). Dry run of the plumbing on
#   a CPU machine (no staging: the .venv has every package; EMOSTREAM_VOCODER=v1 with the
#   fp16 checkpoint is the front ends' cuda setting, lite keeps a 2-core machine real time):
#     DEVICE=cpu PY=.venv/bin/python LEVELS=1,2 WORKERS=2 PROCS=2 DURATION=5 BURST=3 \
#       EMOSTREAM_VOCODER=lite OUT=/tmp/dry-out RES=/tmp/dry-res bench/gpu_engine.sh
# What it runs (two servers start: one for the sweep, one for the bursts):
#   1. a channel check on the device host (bench/engine_channel.py: round trip, no model);
#   2. closed loop (steady, whole text) at LEVELS (default 1,250,500,750,1000,1250), each
#      level good when p95 first audio <= 200 ms, no underruns, no errors; server CPU and GPU
#      memory (nvidia-smi) recorded: the issue's bar is >= 1,000 good and the same at >= 2
#      levels below. Level 1 (first, on the idle server) is the one-stream figure: first audio
#      p50 <= 15 ms, p95 <= 30 ms is its bar (DURATION s of replies: about 5 utterances);
#   3. bursts of BURST replies at once every 4 s (DANMAKU=1): p95 first audio <= 400 ms.
# Each step's files are copied to $OUT as soon as it ends (a call cut at its limit still
# returns them); steps that would end past BUDGET_S are cut or skipped. $OUT holds at most
# 7 files: NAME-{sweep,bursts}.{json,png}, NAME-channel.json, NAME-env.txt, NAME-logs.tar.gz
# (server logs, nvidia-smi samples, this script's output).
# Admission is on (engine refusals are `busy` errors): a level with errors shows where it
# refused; EMOSTREAM_ENGINE_ADMISSION=0 turns it off to see the raw ceiling
# (EMOSTREAM_ENGINE_MAX_UTILIZATION=1.0 does not: late chunks and the first-audio bound still
# refuse).
#
# Environment: DEVICE (default cuda; cpu for a dry run of the plumbing), WORKERS (front ends,
# default 8), PROCS (load-generator processes, default 8), DURATION (s per level, default
# 20), LEVELS, BURST (default 250), NAME (default gpu-engine), DANMAKU (default 1), GRAPHS
# (1: EMOSTREAM_ACOUSTIC_GRAPHS=1, the acoustic model as CUDA graphs in the engine process:
# the multi-process regression should not exist with one process; default 1), BUDGET_S
# (default 560: the device call's 600 s less the packing), DEFAULTS (1: the server as
# `emostream serve --device cuda` alone starts it, its cuda defaults, no --workers and none
# of gpu_engine_env.sh's settings but the staged checkpoint and no embedded voice), SWEEP_S (the sweep starts no
# level past this many seconds, default 330), BACKOFF_MS (a stream refused `busy` waits this
# long before its next reply, default 500: no retry storm), PY (default python3), and any
# EMOSTREAM_* setting.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/loadtest-out}
RES=${RES:-/tmp/engine-res}
DEVICE=${DEVICE:-cuda}
WORKERS=${WORKERS:-8}
PROCS=${PROCS:-8}
DURATION=${DURATION:-20}
LEVELS=${LEVELS:-1,250,500,750,1000,1250}
BURST=${BURST:-250}
NAME=${NAME:-gpu-engine}
DANMAKU=${DANMAKU:-1}
GRAPHS=${GRAPHS:-1}
BUDGET_S=${BUDGET_S:-560}
SWEEP_S=${SWEEP_S:-330}
BACKOFF_MS=${BACKOFF_MS:-500}
mkdir -p "$OUT" "$RES"
rm -f "$RES/$NAME"-*
exec > >(tee "$RES/$NAME-run.log") 2>&1
export PY=${PY:-python3} PYTHONUNBUFFERED=1
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
. bench/gpu_engine_env.sh  # the checkpoint from the staged parts; the shared settings
export READY_TIMEOUT_S=${READY_TIMEOUT_S:-300} IDLE_WAIT_S=${IDLE_WAIT_S:-60}
export DEVICE SERVE_ARGS="--workers $WORKERS"
if [ "${DEFAULTS:-0}" = 1 ]; then SERVE_ARGS=""; WORKERS="default"; GRAPHS="default"; fi
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
{
  date -u +%FT%TZ
  nproc; grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
  echo "device $DEVICE; engine process; workers $WORKERS; load-generator processes $PROCS;" \
    "graphs $GRAPHS; levels $LEVELS x ${DURATION}s; bursts $BURST; ulimit -n $(ulimit -n)"
  env | grep '^EMOSTREAM_' | sort
} >"$RES/$NAME-env.txt" 2>&1
cat "$RES/$NAME-env.txt"
cp "$RES/$NAME-env.txt" "$OUT/"
PYTHONPATH="$PWD/server:$PWD:$PYTHONPATH" "$PY" - <<'PYEOF' \
  || { echo "missing imports or checkpoint: stage .gpujob/lt* (bench/gpu_loadtest.sh)"; exit 3; }
import os
import emostream.transport.app, emostream.engine.process, loadtest.cli  # noqa: F401
import websockets, uvicorn, uvloop, opuslib_next, soxr, psutil, matplotlib  # noqa: F401
from emostream.text.phonemes import G2P
G2P()("你好，hello.")  # the acoustic voices' G2P as they warm it: espeak-ng, jieba, pypinyin, misaki
ckpt = os.environ.get("EMOSTREAM_VOCODER_CHECKPOINT")
if ckpt:
    import torch
    state = torch.load(ckpt, map_location="cpu", weights_only=True)
    print("vocoder checkpoint", ckpt, len(state), "tensors")
PYEOF

step() { echo "== $(date -u +%T) t=${SECONDS}s: $*"; }
collect() {  # what is there so far, to $OUT (at most 7 files in all)
  cp "$RES/$NAME"-*.json "$RES/$NAME"-*.png "$OUT/" 2>/dev/null || true
  (cd "$RES" && shopt -s nullglob && logs=("$NAME"-*.log "$NAME"-*.csv) \
    && tar -czf "$OUT/$NAME-logs.tar.gz" "${logs[@]}") 2>/dev/null || true
}

# 1. The channel alone on this host.
step "channel"
PYTHONPATH="$PWD/server:$PYTHONPATH" timeout 90 "$PY" bench/engine_channel.py --n 2000 \
  -o "$RES/$NAME-channel.json" >/dev/null || echo "channel bench failed: $?"

LABEL="${GPU:-$DEVICE}, engine process + $WORKERS front-end workers, graphs $GRAPHS, voice ${EMOSTREAM_DEFAULT_VOICE:-default}, $PROCS load-generator processes, one host"
SMI=""
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv -l 2 \
    >"$RES/$NAME-nvidia-smi.csv" 2>&1 &
  SMI=$!
fi
WATCH=""
trap '[ -n "$SMI" ] && kill $SMI 2>/dev/null; [ -n "$WATCH" ] && kill $WATCH 2>/dev/null; collect' EXIT
collect

# 2. Closed loop at the levels (level 1 first: one stream on the idle server).
left=$((BUDGET_S - SECONDS)); left=$((left > 60 ? left : 60))
step "sweep $LEVELS (cap ${left}s)"
# CPU of the engine, the front ends and the load generators, one row a second (no profiles):
# NAME-procs.csv in the logs. The watcher ends with the sweep's engine process.
PYTHONPATH="$PWD/server:$PYTHONPATH" "$PY" bench/engine_probe.py watch --out "$RES" \
  --name "$NAME" --max-s "$left" >/dev/null 2>&1 &
WATCH=$!
LABEL="$LABEL" timeout "$left" bench/loadtest.sh "$RES" "$NAME-sweep" --sweep "$LEVELS" \
  --duration "$DURATION" --ramp 3 --procs "$PROCS" --prep-s 10 --settle-s 3 \
  --utterance-timeout 60 --max-total-s "$SWEEP_S" --error-backoff-ms "$BACKOFF_MS" -q \
  || echo "sweep failed: $?"
kill "$WATCH" 2>/dev/null || true
WATCH=""
collect
# 3. Bursts (each reply its own stream; one generator process).
left=$((BUDGET_S - SECONDS))
if [ "$DANMAKU" = 1 ] && [ "$left" -ge 90 ]; then
  step "bursts $BURST (cap ${left}s)"
  LABEL="$LABEL; bursts" timeout "$left" bench/loadtest.sh "$RES" "$NAME-bursts" \
    --pattern bursts --sweep "$BURST" --burst-interval 4 --duration 16 --settle-s 2 -q \
    || echo "bursts failed: $?"
elif [ "$DANMAKU" = 1 ]; then
  step "bursts skipped: ${left}s left of BUDGET_S"
fi
if [ -n "$SMI" ]; then kill "$SMI" 2>/dev/null || true; fi
step "done"

"$PY" - "$RES" "$NAME" <<'PYEOF'
import csv, json, pathlib, re, sys
res, name = pathlib.Path(sys.argv[1]), sys.argv[2]
for p in sorted(res.glob(name + "-*.server.log")):
    lines = p.read_text(errors="replace").splitlines()
    bad = [ln for ln in lines if "Traceback" in ln or "ERROR" in ln]
    print(f"{p.name}: {len(lines)} lines, {len(bad)} with Traceback/ERROR")
run_log = (res / f"{name}-run.log").read_text(errors="replace")
print("server ready after (s):", ", ".join(re.findall(r"== ready after ([0-9.]+) s", run_log)))
ch = res / f"{name}-channel.json"
if ch.exists():
    for k, v in json.load(open(ch))["figures"].items():
        print(f"channel {k}: " + ", ".join(f"{a} {b}" for a, b in v.items()))
for p in sorted(res.glob(name + "-*.json")):
    r = json.load(open(p))
    for lv in r.get("levels", []):
        fa, srv = lv["first_audio_ms"], lv["server"]
        print(f"{p.stem} level {lv['level']:g}: first audio p50 {fa['p50']} p95 {fa['p95']}"
              f" p99 {fa['p99']} ms (n {lv.get('utterances')}), underruns/min"
              f" {lv['underruns']['per_stream_minute']}, errors {lv['errors'] or '-'},"
              f" audio/wall {lv['rtf']['aggregate_audio_s_per_wall_s']},"
              f" server cpu {srv.get('cpu_percent', {}).get('mean')}%,"
              f" gpu mem {srv.get('gpu_memory_bytes_max')}, good {lv['good']}")
        steady = lv.get("first_audio_ms_after_5s")
        if steady and steady.get("n"):  # the level less its start burst (not the bar's figure)
            print(f"{p.stem} level {lv['level']:g}: after the first 5 s: first audio p50"
                  f" {steady['p50']} p95 {steady['p95']} ms (n {steady['n']})")
    if p.stem.endswith("-sweep"):
        levels = {float(lv["level"]): lv for lv in r.get("levels", [])}
        one = levels.get(1.0)
        if one:
            fa = one["first_audio_ms"]
            ok = fa["p50"] is not None and fa["p50"] <= 15 and fa["p95"] <= 30
            print(f"one stream: p50 {fa['p50']} p95 {fa['p95']} ms (bar 15 / 30):",
                  "met" if ok else "NOT met")
        good = sorted(k for k, v in levels.items() if v["good"] and k > 1)
        big = [k for k in good if k >= 1000]
        below = [k for k in good if big and k < big[0]]
        print(f"good levels > 1: {good or '-'}; issue bar (>= 1000 good and 2 levels below):",
              "met" if big and len(below) >= 2 else "NOT met")
    if p.stem.endswith("-bursts"):
        for lv in r.get("levels", []):
            p95 = lv["first_audio_ms"]["p95"]
            print(f"bursts of {lv['level']:g}: p95 {p95} ms (bar 400):",
                  "met" if p95 is not None and p95 <= 400 else "NOT met")
smi = res / f"{name}-nvidia-smi.csv"
used = []
if smi.exists():
    for row in csv.reader(open(smi)):
        cell = row[1].split() if len(row) > 1 else []
        if cell and cell[0].replace(".", "").isdigit():
            used.append(float(cell[0]))
print("GPU memory used (nvidia-smi), max MiB:", max(used) if used else "n/a")
procs = res / f"{name}-procs.csv"  # CPU % per 10 s of the sweep (100 = one core)
if procs.exists():
    rows = list(csv.DictReader(open(procs)))
    print("t_s engine(loop) workers(sum/max of n) loadgen host%  [10-s means of 1-s samples]")
    for i in range(0, len(rows), 10):
        b = rows[i:i + 10]
        m = {k: sum(float(r[k] or 0) for r in b) / len(b) for k in rows[0] if k != "t_s"}
        if m["loadgen_cpu"] >= 5:
            print(f"{float(b[0]['t_s']):.0f} {m['engine_cpu']:.0f}({m['engine_loop_thread_cpu']:.0f})"
                  f" {m['workers_cpu_sum']:.0f}/{m['workers_cpu_max']:.0f} of {m['workers']:.0f}"
                  f" {m['loadgen_cpu']:.0f} {m['host_cpu']:.0f}")
PYEOF
collect
ls -la "$OUT"
