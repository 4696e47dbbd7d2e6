#!/usr/bin/env bash
# First audio through the CPU image against the same server outside a container, on the same
# machine at the same time: ROUNDS rounds, each N utterances against the container (published
# port) then N against a host server (this checkout, PY's environment), one client (the host's
# `emostream bench first-audio`) for both. Run after bench/container_build.sh (the image exists).
#   bench/container_vs_host.sh [OUT.json]   (default bench/results/DATE-cpu2-container-vs-host.json)
# Environment: ENGINE, ENGINE_OPTS, RUN_OPTS, TAG as bench/container_build.sh; PY (default
# .venv/bin/python), N (default 20), ROUNDS (default 3), PORT (container, default 18000),
# HOST_PORT (default 18100).
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${ENGINE:-podman}
read -r -a EOPTS <<<"${ENGINE_OPTS:-}"
read -r -a ROPTS <<<"${RUN_OPTS:-}"
PY=${PY:-.venv/bin/python}
N=${N:-20}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18000}
HOST_PORT=${HOST_PORT:-18100}
TAG=${TAG:-localhost/emostream:cpu}
OUT=${1:-bench/results/$(date -u +%F)-cpu2-container-vs-host.json}
NAME=emostream-vs-$$
WORK=$(mktemp -d)
host_pid=""
cleanup() {
  "$ENGINE" "${EOPTS[@]}" rm -f "$NAME" >/dev/null 2>&1 || true
  [ -n "$host_pid" ] && kill "$host_pid" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
wait_up() {
  for _ in $(seq 1 240); do
    curl -s -m 2 "http://127.0.0.1:$1/healthz" >/dev/null && return 0
    sleep 0.5
  done
  echo "no /healthz on :$1"; return 1
}

"$ENGINE" "${EOPTS[@]}" run -d --name "$NAME" "${ROPTS[@]}" -p "127.0.0.1:$PORT:8000" \
  -e EMOSTREAM_ALLOW_UNAUTHENTICATED=1 "$TAG" >/dev/null
EMOSTREAM_MODELS_DIR=$PWD/models EMOSTREAM_DATA_DIR=$WORK/data PYTHONPATH=server \
  "$PY" -m emostream serve --port "$HOST_PORT" >"$WORK/host.log" 2>&1 &
host_pid=$!
wait_up "$PORT"
wait_up "$HOST_PORT"
for r in $(seq 1 "$ROUNDS"); do
  for side in container host; do
    port=$PORT; [ $side = host ] && port=$HOST_PORT
    PYTHONPATH=server "$PY" -m emostream bench first-audio --url "ws://127.0.0.1:$port/v1/stream" \
      --n "$N" -o "$WORK/$side-$r.json" >/dev/null
    echo "round $r $side: $(PYTHONPATH=server "$PY" -c "import json,sys; print(json.load(open(sys.argv[1]))['first_audio_ms'])" "$WORK/$side-$r.json")"
  done
done
WORK=$WORK OUT=$OUT ROUNDS=$ROUNDS "$PY" - <<'EOF'
import json, os
work, rounds = os.environ["WORK"], int(os.environ["ROUNDS"])
runs = {side: [json.load(open(f"{work}/{side}-{r}.json")) for r in range(1, rounds + 1)]
        for side in ("container", "host")}
result = {
    "what": "first audio (WebSocket, one stream at a time) through the CPU image's published "
            "port against a server of the same checkout outside a container, rounds alternated",
    "rounds": [{side: {"first_audio_ms": runs[side][i]["first_audio_ms"],
                       "loadavg_1m": runs[side][i]["host"]["loadavg_1m"]}
                for side in runs} for i in range(rounds)],
    "runs": runs,
}
with open(os.environ["OUT"], "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
EOF
echo "== wrote $OUT"
