#!/usr/bin/env bash
# Issue 13: why does the engine process (EMOSTREAM_ENGINE=process) top out? One short device
# call (~100-130 s of wall time, BUDGET_S caps it at 190) that starts the server as
# bench/gpu_engine.sh does (engine process + WORKERS front ends, acoustic CUDA graphs),
# admission OFF (EMOSTREAM_ENGINE_ADMISSION=0: the raw ceiling, no `busy`), drives ONE closed
# loop level (LEVEL streams for DURATION s) and meanwhile watches the engine from the side:
#   * the engine's own stats: one `engine stats {json}` line every EMOSTREAM_ENGINE_STATS_S
#     (2 here) in the server log: per stage batches, batch sizes (histogram), padded lengths,
#     seconds in the stage's call vs host work around it, item waits; the loop's time by part
#     (wait / poll / intake / schedule / prep / run / post / deliver / publish), queue depth,
#     messages, CPU seconds of the loop thread (emostream.engine.stats);
#   * py-spy: a RECORD_S s speedscope recording of the engine (RATE Hz, idle threads too,
#     non-blocking), of one front-end worker (RATE/2, idle threads too) and of another with
#     --gil (whoever holds the GIL: what the worker's event loop waits for), py-spy dumps
#     (bench/engine_probe.py; `python bench/engine_probe.py summarize FILE` reads them);
#   * CPU % every second: engine process, its loop thread, workers, load generator, host;
#   * nvidia-smi every 0.5 s (utilization, memory, power, SM clock);
#   * bench/engine_host_overhead.py on this host first (the loop's host cost per batch and
#     per item with stages that cost nothing, ~5 s).
# $OUT gets 8 files at most, each copied as soon as it exists (a call cut at its limit still
# returns what was there): NAME-level.json (the load generator's report), NAME-engine-stats.jsonl,
# NAME-engine.speedscope.json, NAME-worker.speedscope.json, NAME-worker-gil.speedscope.json,
# NAME-procs.csv, NAME-nvidia-smi.csv, NAME-logs.tar.gz (NAME-level.server.log, NAME-dump.txt,
# this script's output, env, the host-overhead JSON, the level's plot).
#
# Staging is bench/gpu_loadtest.sh's (`prepare` packs py-spy, xz'd, into .gpujob/lt1; `stage`
# unpacks it to /tmp/site/bin/py-spy). Move the corpus shards and the light vocoder out of the
# tree first and check `bench/gpu_loadtest.sh size` (its header), then, back to back:
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt1", carry=[".gpujob/lt1"])
#     run(command="bash bench/gpu_loadtest.sh stage .gpujob/lt2 && bash bench/gpu_engine_probe.sh",
#         carry=[".gpujob/lt2"], timeout_s=240)
# Dry run of the plumbing on a CPU machine (no staging; py-spy from the venv):
#     DEVICE=cpu PY=.venv/bin/python PYSPY=.venv/bin/py-spy LEVEL=3 WORKERS=2 PROCS=2 \
#       DURATION=10 RECORD_S=4 PREP_S=3 EMOSTREAM_VOCODER=lite OUT=/tmp/probe-out \
#       RES=/tmp/probe-res bench/gpu_engine_probe.sh
#
# Environment: DEVICE (default cuda), LEVEL (streams, default 400: past the 250 where p95 first
# audio already failed, so the loop is saturated), DURATION (s, default 25), WORKERS (8),
# PROCS (load-generator processes, 8), PREP_S (their connect + warm-up time, 10), RECORD_S
# (15), RATE (200), GRAPHS (1), BUDGET_S (190), NAME (probe), PY (python3), PYSPY (default:
# /tmp/site/bin/py-spy, else py-spy on PATH), any EMOSTREAM_* (EMOSTREAM_ENGINE_ADMISSION=1
# puts admission back).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/loadtest-out}
RES=${RES:-/tmp/probe-res}
DEVICE=${DEVICE:-cuda}
LEVEL=${LEVEL:-400}
DURATION=${DURATION:-25}
WORKERS=${WORKERS:-8}
PROCS=${PROCS:-8}
PREP_S=${PREP_S:-10}
RECORD_S=${RECORD_S:-15}
RATE=${RATE:-200}
GRAPHS=${GRAPHS:-1}
BUDGET_S=${BUDGET_S:-190}
NAME=${NAME:-probe}
mkdir -p "$OUT" "$RES"
rm -f "$RES/$NAME"-*
exec > >(tee "$RES/$NAME-run.log") 2>&1
export PY=${PY:-python3} PYTHONUNBUFFERED=1
PYSPY=${PYSPY:-$( [ -x /tmp/site/bin/py-spy ] && echo /tmp/site/bin/py-spy || command -v py-spy || true)}
# py-spy attaches with ptrace: under Yama ptrace_scope 1 without CAP_SYS_PTRACE only to
# processes that allow it. Every Python process of the server runs this sitecustomize (first
# on PYTHONPATH): prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY); a no-op elsewhere.
mkdir -p /tmp/probe-ptrace
cat >/tmp/probe-ptrace/sitecustomize.py <<'PYEOF'
try:
    import ctypes
    ctypes.CDLL(None).prctl(0x59616D61, ctypes.c_ulong((1 << 64) - 1), 0, 0, 0)
except Exception:
    pass
PYEOF
export PYTHONPATH=/tmp/probe-ptrace:/tmp/site${PYTHONPATH:+:$PYTHONPATH}
. bench/gpu_engine_env.sh  # the checkpoint from the staged parts; the shared settings
export EMOSTREAM_ENGINE_ADMISSION=${EMOSTREAM_ENGINE_ADMISSION:-0}
export EMOSTREAM_ENGINE_STATS_S=${EMOSTREAM_ENGINE_STATS_S:-2}
export READY_TIMEOUT_S=${READY_TIMEOUT_S:-120} IDLE_WAIT_S=${IDLE_WAIT_S:-20}
export DEVICE SERVE_ARGS="--workers $WORKERS"
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

step() { echo "== $(date -u +%T) t=${SECONDS}s: $*"; }
collect() {  # what exists so far, to $OUT (8 files at most)
  cp "$RES/$NAME-level.json" "$RES/$NAME-engine.speedscope.json" \
    "$RES/$NAME-worker.speedscope.json" "$RES/$NAME-worker-gil.speedscope.json" \
    "$RES/$NAME-procs.csv" "$RES/$NAME-nvidia-smi.csv" "$OUT/" 2>/dev/null || true
  if [ -f "$RES/$NAME-level.server.log" ]; then
    grep -o 'engine stats {.*' "$RES/$NAME-level.server.log" | sed 's/^engine stats //' \
      >"$OUT/$NAME-engine-stats.jsonl" || true
  fi
  (cd "$RES" && shopt -s nullglob && logs=("$NAME"-*.log "$NAME"-env.txt "$NAME"-host.json \
    "$NAME"-dump.txt "$NAME"-level.png) && tar -czf "$OUT/$NAME-logs.tar.gz" "${logs[@]}") \
    2>/dev/null || true
}
SMI="" WATCH=""
cleanup() {
  [ -n "$SMI" ] && kill "$SMI" 2>/dev/null
  [ -n "$WATCH" ] && kill "$WATCH" 2>/dev/null
  collect
}
trap cleanup EXIT

{
  date -u +%FT%TZ
  nproc; grep -m1 'model name' /proc/cpuinfo || true
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
  git log -1 --format='commit %H %s' 2>/dev/null || true
  echo "device $DEVICE; level $LEVEL x ${DURATION}s; workers $WORKERS; load-generator processes" \
    "$PROCS; graphs $GRAPHS; py-spy ${PYSPY:-none} ($("${PYSPY:-false}" --version 2>&1 || true))"
  echo "ptrace_scope $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo absent);" \
    "$(grep CapEff /proc/self/status)"
  env | grep '^EMOSTREAM_' | sort
} >"$RES/$NAME-env.txt" 2>&1
cat "$RES/$NAME-env.txt"

step "host overhead of the engine loop (no device)"
PYTHONPATH="$PWD/server:$PYTHONPATH" timeout 60 "$PY" bench/engine_host_overhead.py \
  --repeats 10 -o "$RES/$NAME-host.json" >/dev/null 2>&1 || echo "host overhead bench failed: $?"
"$PY" -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["figures"]))' \
  "$RES/$NAME-host.json" 2>/dev/null || true

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.memory,memory.used,power.draw,clocks.sm \
    --format=csv -lms 500 >"$RES/$NAME-nvidia-smi.csv" 2>&1 &
  SMI=$!
fi
# The watcher: engine PID, CPU samples, py-spy once the load generator has warmed up
# (loadtest.sh prints "server processes; CPU" when the server is ready and quiet; then the
# generators connect and warm up for PREP_S, ramp 3 s, and measure DURATION s).
PYTHONPATH="$PWD/server:$PYTHONPATH" "$PY" bench/engine_probe.py watch --out "$RES" \
  --name "$NAME" --pyspy "${PYSPY:-}" --log "$RES/$NAME-run.log" --after-line "server processes; CPU" \
  --start-after "$((PREP_S + 5))" --record-s "$RECORD_S" --rate "$RATE" \
  --max-s "$((BUDGET_S + 30))" &
WATCH=$!

left=$((BUDGET_S - SECONDS - 10))
step "level $LEVEL x ${DURATION}s, admission ${EMOSTREAM_ENGINE_ADMISSION} (cap ${left}s)"
LABEL="${DEVICE}, engine process + $WORKERS front ends, graphs $GRAPHS, admission $EMOSTREAM_ENGINE_ADMISSION, probe" \
  timeout "$left" bench/loadtest.sh "$RES" "$NAME-level" --sweep "$LEVEL" --duration "$DURATION" \
  --ramp 3 --procs "$PROCS" --prep-s "$PREP_S" --settle-s 1 --utterance-timeout 30 \
  --error-backoff-ms 500 -q || echo "level failed: $?"
wait "$WATCH" 2>/dev/null || true
WATCH=""
step "done"

# Profiles first, the figures last (a device call's output tail is its last 12,000 characters).
for side in engine:1:12 worker:2:8 worker-gil:1:10; do
  IFS=: read -r who threads top <<<"$side"
  f="$RES/$NAME-$who.speedscope.json"
  if [ -f "$f" ]; then
    "$PY" bench/engine_probe.py summarize "$f" --top "$top" --threads "$threads" | cut -c1-110 || true
  fi
done
"$PY" - "$RES" "$NAME" <<'PYEOF' || true
import json, pathlib, sys
res, name = pathlib.Path(sys.argv[1]), sys.argv[2]
p = res / f"{name}-level.json"
if p.exists():
    for lv in json.load(open(p)).get("levels", []):
        fa = lv["first_audio_ms"]
        print(f"level {lv['level']:g}: first audio p50 {fa['p50']} p95 {fa['p95']} ms"
              f" (server p95 {lv['server_first_audio_ms']['p95']}), underruns/min"
              f" {lv['underruns']['per_stream_minute']}, errors {lv['errors'] or '-'},"
              f" audio/wall {lv['rtf']['aggregate_audio_s_per_wall_s']},"
              f" server cpu {lv['server'].get('cpu_percent', {}).get('mean')}%")
log = res / f"{name}-level.server.log"
lines = [ln.split("engine stats ", 1)[1] for ln in log.read_text(errors="replace").splitlines()
         if "engine stats {" in ln] if log.exists() else []
print("engine stats (intervals with work): busy, run share, loop cpu s / interval s, queued"
      " mean/max | per stage: items/s, batch mean/p95, run + host ms a batch, wait p95,"
      " urgent wait p95 ms, late")
for raw in lines:
    r = json.loads(raw)
    lp = r["loop"]
    if not r["stages"]:
        continue
    st = " | ".join(
        f"{k.removeprefix('emostream-')[:10]} {s['items_per_s']}/s b{s['batch_mean']}/{s['batch_p95']}"
        f" {s['run_ms_per_batch']}+{s['host_ms_per_batch']}ms w{s['wait_ms']['p95']}"
        f" u{s['urgent_wait_ms']['p95']} L{s['late']}"
        for k, s in r["stages"].items())
    print(f"{lp['busy']} {lp['run_share']} {r['cpu_s']['loop_thread']}/{r['interval_s']}"
          f" q{lp['queued_mean']}/{lp['queued_max']} | {st}")
procs = res / f"{name}-procs.csv"
if procs.exists():
    import csv
    rows = [r for r in csv.DictReader(open(procs))  # the level: generators and engine at work
            if float(r["loadgen_cpu"] or 0) >= 20 and float(r["engine_cpu"] or 0) >= 20]
    if rows:
        cols = ("engine_cpu", "engine_loop_thread_cpu", "workers_cpu_sum", "workers_cpu_max",
                "loadgen_cpu", "host_cpu")
        print(f"cpu % over {len(rows)} loaded samples (mean / max): " + ", ".join(
            f"{c} {sum(float(r[c]) for r in rows) / len(rows):.0f} / {max(float(r[c]) for r in rows):.0f}"
            for c in cols))
PYEOF
collect
ls -la "$OUT"
