"""First audio of a cached phrase over the real WebSocket, against the same phrase spoken live.

Starts ``emostream serve`` on a free loopback port (or uses ``--url``), then on one connection:
each of the phrases once (live: a miss, stored), then ``--n`` utterances cycling through them
(hits). Every utterance sends start + text + end back to back and times the first binary frame
on the client clock from the ``start`` send, as ``emostream bench first-audio`` does; the
server's own ``first_audio_ms`` from ``done`` is reported too.

    .venv/bin/python bench/phrase_cache.py [--voice af_heart] [--n 400] [-o OUT.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import websockets

from emostream.benchmarks.first_audio import SENTENCES

ROOT = Path(__file__).resolve().parents[1]

PHRASES = SENTENCES  # the first-audio bench's short replies


def percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return round(s[lo] + (s[hi] - s[lo]) * (k - lo), 3)


def summary(values: list[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "p50": percentile(values, 0.5),
        "p95": percentile(values, 0.95),
        "p99": percentile(values, 0.99),
        "max": round(max(values), 3),
        "mean": round(sum(values) / len(values), 3),
    }


async def utterance(
    ws: Any, text: str, start: dict[str, Any], *, cancel: bool = False
) -> dict[str, Any]:
    """One utterance; with ``cancel``, a ``cancel`` goes out once the first audio is in (a
    replay is paced to real time: a whole one takes its audio's length less a second)."""
    t0 = time.perf_counter()
    await ws.send(json.dumps(start))
    await ws.send(json.dumps({"type": "text", "text": text}))
    await ws.send(json.dumps({"type": "end"}))
    first = None
    while True:
        msg = await ws.recv()
        if isinstance(msg, bytes):
            if first is None:
                first = time.perf_counter()
                if cancel:
                    await ws.send(json.dumps({"type": "cancel"}))
            continue
        event = json.loads(msg)
        if event["type"] == "error":
            raise RuntimeError(event)
        if event["type"] == "done":
            assert first is not None
            return {
                "client_ms": 1000 * (first - t0),
                "server_ms": event["first_audio_ms"],
                "cached": bool(event.get("cached")),
                "audio_ms": event["audio_ms"],
            }


async def run(url: str, args: argparse.Namespace) -> dict[str, Any]:
    start: dict[str, Any] = {"type": "start", "voice": args.voice,
                             "format": {"codec": args.codec, "sample_rate": args.rate}}  # fmt: skip
    async with websockets.connect(url, compression=None, max_size=None) as ws:
        live = [await utterance(ws, text, start) for text in PHRASES]
        hits = [
            await utterance(ws, PHRASES[i % len(PHRASES)], start, cancel=not args.full)
            for i in range(args.n)
        ]
    if any(r["cached"] for r in live) or not all(r["cached"] for r in hits):
        raise RuntimeError("expected the first round live and every later one cached")
    return {
        "cached": {
            "client_first_audio_ms": summary([r["client_ms"] for r in hits]),
            "server_first_audio_ms": summary([r["server_ms"] for r in hits]),
        },
        "live": {
            "client_first_audio_ms": summary([r["client_ms"] for r in live]),
            "server_first_audio_ms": summary([r["server_ms"] for r in live]),
        },
        "audio_ms_per_phrase": [r["audio_ms"] for r in live],
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "EMOSTREAM_LOG_LEVEL": "warning"}
    cmd = [sys.executable, "-m", "emostream", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env)
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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--url", default="", help="a running server (default: start one)")
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--codec", default="opus", choices=["opus", "pcm_s16le"])
    p.add_argument("--rate", type=int, default=48000)
    p.add_argument("--n", type=int, default=400, help="cached utterances")
    p.add_argument(
        "--full", action="store_true", help="hear every cached reply out (default: cancel each "
        "once its first audio is in; the live round is always heard out, to be stored)",
    )  # fmt: skip
    p.add_argument("-o", "--output", default="")
    args = p.parse_args()
    proc = None
    url = args.url
    if not url:
        port = free_port()
        proc = start_server(port)
        url = f"ws://127.0.0.1:{port}/v1/stream"
    try:
        load = os.getloadavg()[0]
        result = asyncio.run(run(url, args))
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
    report = {
        "what": "first audio of a cached phrase vs live, one WebSocket connection, loopback",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([".venv/bin/python", "bench/phrase_cache.py", *sys.argv[1:]]),
        "host": {"cpus": os.cpu_count(), "machine": platform.machine(), "loadavg_1m": load},
        "voice": args.voice,
        "format": {"codec": args.codec, "sample_rate": args.rate},
        "phrases": len(PHRASES),
        "definition": "client_first_audio_ms: start sent (start, text, end back to back) to "
        "the first binary frame received; server_first_audio_ms: done.first_audio_ms; cached "
        "replies " + ("heard out" if args.full else "cancelled once their first audio is in"),
        **result,
    }
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if args.output:
        Path(args.output).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
