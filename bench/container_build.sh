#!/usr/bin/env bash
# The Dockerfile built, run and spoken through: builds the CPU image (--target cpu), starts it,
# and records the build time, the image size, /healthz, the demo page, a POST
# /v1/audio/speech (WAV, checked for sound) and first audio over the WebSocket
# (`emostream bench first-audio` run inside the container) as one JSON file.
#   bench/container_build.sh [OUT.json]     (default bench/results/DATE-cpu2-container-build.json)
# Environment:
#   ENGINE        podman (default) or docker
#   BASE_IMAGE    the Dockerfile's base; LOCAL_BASE=1 makes one from Debian packages first
#                 (scripts/container_base.sh --host-ca: no registry needed) and uses it
#   ENGINE_OPTS   options before the subcommand (e.g. "--runtime runc")
#   RUN_OPTS      options of build and run (e.g. "--ulimit nofile=4096:4096")
#   PORT          host port published for the container (default 18000)
#   N             measured utterances of first audio (default 20)
# On the 2-core sandbox of 2026-12-07 (Debian 12 VM, root without CAP_SYS_RESOURCE, cgroup v1
# with an empty v2 hierarchy beside it) podman 4.3 needed
#   LOCAL_BASE=1 ENGINE_OPTS="--runtime runc" \
#   RUN_OPTS="--ulimit nofile=4096:4096 --ulimit nproc=4096:4096" bench/container_build.sh
# (crun refuses both limits and the hybrid cgroups: docs/containers.md).
set -euo pipefail
cd "$(dirname "$0")/.."
ENGINE=${ENGINE:-podman}
read -r -a EOPTS <<<"${ENGINE_OPTS:-}"
read -r -a ROPTS <<<"${RUN_OPTS:-}"
PORT=${PORT:-18000}
N=${N:-20}
OUT=${1:-bench/results/$(date -u +%F)-cpu2-container-build.json}
TAG=${TAG:-localhost/emostream:cpu}
NAME=emostream-smoke-$$
WORK=$(mktemp -d)
trap '"$ENGINE" "${EOPTS[@]}" rm -f "$NAME" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
eng() { "$ENGINE" "${EOPTS[@]}" "$@"; }
now() { date +%s%N; }
secs() { python3 -c "print(round(($(now) - $1) / 1e9, 2))"; }

base_s=0
if [ "${LOCAL_BASE:-0}" = 1 ]; then
  BASE_IMAGE=${BASE_IMAGE:-localhost/emostream-base:bookworm}
  t0=$(now)
  scripts/container_base.sh --host-ca "$BASE_IMAGE"
  base_s=$(secs "$t0")
fi
build_args=()
[ -n "${BASE_IMAGE:-}" ] && build_args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
fmt=()
[ "$ENGINE" = podman ] && fmt=(--format docker)  # keeps HEALTHCHECK (OCI images drop it)

echo "== build --target cpu"
t0=$(now)
eng build "${fmt[@]}" "${ROPTS[@]}" "${build_args[@]}" --no-cache --target cpu -t "$TAG" . \
  >"$WORK/build.log" 2>&1 || { tail -40 "$WORK/build.log"; exit 1; }
build_s=$(secs "$t0")
size=$(eng image inspect --format '{{.Size}}' "$TAG")

echo "== run"
t0=$(now)
eng run -d --name "$NAME" "${ROPTS[@]}" -p "127.0.0.1:$PORT:8000" \
  -e EMOSTREAM_ALLOW_UNAUTHENTICATED=1 "$TAG" >/dev/null
health=""
for _ in $(seq 1 240); do
  health=$(curl -s -m 2 "http://127.0.0.1:$PORT/healthz" || true)
  [ -n "$health" ] && break
  sleep 0.5
done
ready_s=$(secs "$t0")
[ -n "$health" ] || { eng logs "$NAME" | tail -40; echo "no /healthz"; exit 1; }
healthcheck=not_run  # the image's HEALTHCHECK, run once now (podman; docker runs it on a timer)
if [ "$ENGINE" = podman ]; then
  if eng healthcheck run "$NAME" >/dev/null 2>&1; then healthcheck=healthy; else healthcheck=unhealthy; fi
fi
page=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/")
speech=$(curl -s -o "$WORK/speech.wav" -w '%{http_code} %{time_starttransfer} %{time_total}' \
  "http://127.0.0.1:$PORT/v1/audio/speech" \
  -d '{"input":"Hello from inside the container image.","response_format":"wav"}')
echo "== first audio (WebSocket, inside the container)"
eng exec "$NAME" emostream bench first-audio --url ws://127.0.0.1:8000/v1/stream --n "$N" \
  -o /tmp/first-audio.json >"$WORK/fa.log" 2>&1 || { cat "$WORK/fa.log"; exit 1; }
eng cp "$NAME:/tmp/first-audio.json" "$WORK/first-audio.json"
eng logs "$NAME" >"$WORK/server.log" 2>&1

ENGINE_VERSION=$(eng --version) BUILD_S=$build_s BASE_S=$base_s SIZE=$size READY_S=$ready_s \
HEALTH=$health HEALTHCHECK=$healthcheck PAGE=$page SPEECH=$speech WORK=$WORK OUT=$OUT \
BASE=${BASE_IMAGE:-python:3.11-slim-bookworm} OPTS="${ENGINE_OPTS:-} ${RUN_OPTS:-}" \
python3 - <<'EOF'
import array, json, math, os, wave
env = os.environ
with wave.open(os.path.join(env["WORK"], "speech.wav")) as w:
    rate, frames = w.getframerate(), w.readframes(w.getnframes())
pcm = array.array("h", frames)
rms = math.sqrt(sum(x * x for x in pcm) / max(1, len(pcm)))
status, ttfb, total = env["SPEECH"].split()
fa = json.load(open(os.path.join(env["WORK"], "first-audio.json")))
result = {
    "what": "the Dockerfile's CPU image (--target cpu) built, started and spoken through",
    "engine": env["ENGINE_VERSION"], "engine_options": env["OPTS"].strip(),
    "base_image": env["BASE"],
    "base_image_build_s": round(float(env["BASE_S"]), 1),
    "build_s": round(float(env["BUILD_S"]), 1),
    "image_bytes": int(env["SIZE"]), "image_mb": round(int(env["SIZE"]) / 1e6, 1),
    "ready_s": round(float(env["READY_S"]), 2),  # run -> first /healthz answer
    "healthz": json.loads(env["HEALTH"]), "healthcheck": env["HEALTHCHECK"],
    "demo_page_status": int(env["PAGE"]),
    "speech": {"status": int(status), "bytes": os.path.getsize(os.path.join(env["WORK"], "speech.wav")),
               "sample_rate": rate, "audio_s": round(len(pcm) / rate, 2),
               "rms": round(rms, 1), "peak": max(map(abs, pcm), default=0),
               "ttfb_ms": round(float(ttfb) * 1000, 1), "total_ms": round(float(total) * 1000, 1)},
    "first_audio_ws": fa,
}
assert result["speech"]["status"] == 200 and rms > 100, "the speech is silent or refused"
with open(env["OUT"], "w") as f:
    json.dump(result, f, indent=2)
    f.write("\n")
print(json.dumps({k: result[k] for k in ("build_s", "image_mb", "ready_s", "demo_page_status")}),
      result["speech"], fa["first_audio_ms"])
EOF
echo "== wrote $OUT"
