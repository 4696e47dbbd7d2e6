#!/usr/bin/env bash
# The CPU load test committed under bench/results/: the embedded voice on this machine's
# cores, server and load generator on one host over loopback (about 12 minutes).
#   bench/cpu_loadtest.sh [OUTDIR]      (default bench/results)
# Writes loadtest-cpu-DATE-{findmax,sweep,bursts,danmaku,tokens}.{json,png} (+ server logs, which
# are removed when empty).
set -euo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${1:-bench/results}
DAY=$(date -u +%F)
export LABEL=${LABEL:-"CPU server (embedded voice joe, ONNX Runtime) + load generator, $(nproc) cores"}
run() { bench/loadtest.sh "$OUTDIR" "loadtest-cpu-$DAY-$1" "${@:2}" -q; }

# Largest N with p95 first audio <= 200 ms, no underruns, no errors (closed loop).
run findmax --find-max --duration 30 --settle-s 3
# The curve past it, for the plot.
run sweep --sweep 1,2,3,4,6,8 --duration 30 --settle-s 3
# Bursts of short replies every 5 s, each its own stream.
run bursts --pattern bursts --sweep 1,2,4,8 --burst-interval 5 --duration 20 --settle-s 3
# Danmaku: bursts of 20-60 chat lines on one connection (line queue, TTL 8 s, bound 32).
run danmaku --pattern danmaku --sweep 20,40,60 --burst-interval 5 --duration 30 --settle-s 3
# Token by token at 30 tokens/s (an LLM's pace), closed loop.
run tokens --feed tokens --tokens-per-s 30 --sweep 1,2,3 --duration 30 --settle-s 3
find "$OUTDIR" -name "loadtest-cpu-$DAY-*.server.log" -empty -delete
