#!/usr/bin/env bash
# Start an EmoStream server on a free loopback port, run the load generator against it,
# stop the server. Results: OUTDIR/NAME.json (report), OUTDIR/NAME.png (plot),
# OUTDIR/NAME.server.log.
#
#   bench/loadtest.sh OUTDIR NAME [python -m loadtest options...]
#   e.g. bench/loadtest.sh bench/results loadtest-cpu --find-max --duration 30
#
# Environment: PY (python with the server's deps; default .venv/bin/python, else python3),
# DEVICE (cpu | cuda; default cpu), SERVE_ARGS (more serve flags, e.g. --workers 4),
# READY_TIMEOUT_S (default 120), IDLE_WAIT_S (after /healthz, wait up to this long for
# the server's processes to go quiet; default 0), LABEL (stored in the report), and any
# EMOSTREAM_* setting for the server (e.g. EMOSTREAM_MAX_STREAMS).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR NAME [loadtest options]" >&2; exit 2; }
OUTDIR=$1; NAME=$2; shift 2
mkdir -p "$OUTDIR"
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
DEVICE=${DEVICE:-cpu}
READY_TIMEOUT_S=${READY_TIMEOUT_S:-120}
export PYTHONPATH="$PWD/server:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export EMOSTREAM_LOG_LEVEL=${EMOSTREAM_LOG_LEVEL:-warning}

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
SERVER_CMD="$PY -m emostream serve --host 127.0.0.1 --port $PORT --device $DEVICE ${SERVE_ARGS:-}"
echo "== server: $SERVER_CMD"
$SERVER_CMD >"$OUTDIR/$NAME.server.log" 2>&1 &
SERVER_PID=$!
LOAD_PID=""
stop_server() {
  if [ -n "$LOAD_PID" ]; then kill "$LOAD_PID" 2>/dev/null || true; fi
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || return 0; sleep 0.2; done
  kill -9 "$SERVER_PID" 2>/dev/null || true
}
trap stop_server EXIT
trap 'exit 143' TERM INT

# Wait (bounded) for /healthz; with IDLE_WAIT_S, then (at most that long) for the server's
# processes to go quiet: /healthz answers once the first of several workers is up.
"$PY" - "$PORT" "$READY_TIMEOUT_S" "$SERVER_PID" "${IDLE_WAIT_S:-0}" <<'PYEOF'
import os, sys, time, urllib.request
port, timeout, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
idle_wait = float(sys.argv[4])
t0 = time.monotonic()
deadline = t0 + timeout
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("server exited before it was ready")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
            if r.status == 200:
                print(f"== ready after {time.monotonic() - t0:.1f} s:", r.read().decode())
                break
    except OSError:
        pass
    time.sleep(0.5)
else:
    sys.exit(f"server not ready after {timeout:.0f} s")
if idle_wait > 0:
    import psutil

    root, t1, cpu = psutil.Process(pid), time.monotonic(), float("nan")
    while time.monotonic() - t1 < idle_wait:
        procs = [root, *root.children(recursive=True)]
        for p in procs:
            try:
                p.cpu_percent(None)
            except psutil.Error:
                pass
        time.sleep(1.0)
        cpu = 0.0
        for p in procs:
            try:
                cpu += p.cpu_percent(None)
            except psutil.Error:
                pass
        if cpu < 30.0:
            break
    print(f"== {len(procs)} server processes; CPU {cpu:.0f} % after"
          f" {time.monotonic() - t1:.1f} s more (quiet below 30 %)")
PYEOF

"$PY" -m loadtest --url "ws://127.0.0.1:$PORT/v1/stream" --server-pid "$SERVER_PID" \
  --server-cmd "$SERVER_CMD" --label "${LABEL:-}" \
  -o "$OUTDIR/$NAME.json" --plot "$OUTDIR/$NAME.png" "$@" &
LOAD_PID=$!
wait "$LOAD_PID"
