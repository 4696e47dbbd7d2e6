"""First audio of one short reply through each way a bot can reach the server.

Against a running server (``--url http://HOST:PORT``), the same sentence, whole, through:

* ``native``: WebSocket ``/v1/stream`` (``start``, ``text``, ``end``; PCM 24 kHz);
* ``openai``: ``POST /v1/audio/speech`` as the ``openai`` package sends it (``model``, mp3);
* ``elevenlabs``: WebSocket ``/v1/text-to-speech/{voice}/stream-input`` (open, text with
  ``flush``, end; ``pcm_24000``);
* ``cartesia``: WebSocket ``/tts/websocket`` (one request, ``continue: false``; raw PCM 24 kHz).

First audio: from the request's first byte sent to the first audio byte received (client
clock), ``--runs`` times each, paths interleaved so load hits them alike; the phrase cache is
asked off where the API has a field for it (native), and every run's first clause differs (a
number in it), so the phrase cache never answers (it keys on a segment's text). Prints JSON with p50 / p90 per path::

    python bench/bot_paths.py --url http://127.0.0.1:8000 --runs 15 -o OUT.json
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import platform
import random
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import websockets

TEXT = "Order {n} is on its way, and I can help with anything else you need."


def _ws(url: str) -> str:
    return url.replace("http://", "ws://").replace("https://", "wss://")


async def native(url: str, voice: str, text: str, key: str) -> float:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with websockets.connect(_ws(url) + "/v1/stream", additional_headers=headers) as ws:
        t0 = time.perf_counter()
        await ws.send(json.dumps({"type": "start", "voice": voice, "cache": False,
                                  "format": {"codec": "pcm_s16le", "sample_rate": 24000}}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        first = 0.0
        async for msg in ws:
            if isinstance(msg, bytes) and not first:
                first = time.perf_counter() - t0
            elif isinstance(msg, str) and json.loads(msg).get("type") in ("done", "error"):
                break
        return first


async def openai(url: str, voice: str, text: str, key: str) -> float:
    body = {"model": "tts-1", "voice": voice, "input": text}
    headers = {"Authorization": f"Bearer {key or 'none'}"}
    async with httpx.AsyncClient(timeout=30) as client:
        t0 = time.perf_counter()
        async with client.stream("POST", url + "/v1/audio/speech", json=body,
                                 headers=headers) as r:  # fmt: skip
            r.raise_for_status()
            first = 0.0
            async for chunk in r.aiter_bytes():
                if chunk and not first:
                    first = time.perf_counter() - t0
            return first


async def elevenlabs(url: str, voice: str, text: str, key: str) -> float:
    headers = {"xi-api-key": key} if key else {}
    path = f"/v1/text-to-speech/{voice}/stream-input?output_format=pcm_24000"
    async with websockets.connect(_ws(url) + path, additional_headers=headers) as ws:
        t0 = time.perf_counter()
        await ws.send(json.dumps({"text": " "}))
        await ws.send(json.dumps({"text": text + " ", "flush": True}))
        await ws.send(json.dumps({"text": ""}))
        first = 0.0
        async for msg in ws:
            data = json.loads(msg)
            if data.get("audio") and not first:
                first = time.perf_counter() - t0
            if data.get("error") or data.get("message"):
                raise RuntimeError(f"elevenlabs: {data}")
            if data.get("isFinal"):
                break
        return first


async def cartesia(url: str, voice: str, text: str, key: str) -> float:
    query = f"?api_key={key}&cartesia_version=2025-04-16" if key else "?cartesia_version=2025-04-16"
    async with websockets.connect(_ws(url) + "/tts/websocket" + query) as ws:
        t0 = time.perf_counter()
        await ws.send(json.dumps({
            "context_id": "bench", "model_id": "sonic-2", "transcript": text,
            "voice": {"mode": "id", "id": voice}, "continue": False,
            "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        }))  # fmt: skip
        first = 0.0
        async for msg in ws:
            data = json.loads(msg)
            if data.get("type") == "chunk" and data.get("data") and not first:
                base64.b64decode(data["data"])
                first = time.perf_counter() - t0
            if data.get("type") == "error":
                raise RuntimeError(f"cartesia: {data}")
            if data.get("type") == "done":
                break
        return first


PATHS = {"native": native, "openai": openai, "elevenlabs": elevenlabs, "cartesia": cartesia}


async def run(a: argparse.Namespace) -> dict[str, Any]:
    times: dict[str, list[float]] = {p: [] for p in a.paths.split(",")}
    base = random.randrange(10_000, 90_000)  # new numbers on every invocation: no cached phrase
    for path, fn in PATHS.items():  # warm-up, not counted
        if path in times:
            await fn(a.url, a.voice, TEXT.format(n=base), a.key)
    for i in range(a.runs):
        for k, path in enumerate(times):
            text = TEXT.format(n=base + 1 + i * len(times) + k)
            ms = 1000 * await PATHS[path](a.url, a.voice, text, a.key)
            times[path].append(round(ms, 1))
            await asyncio.sleep(0.2)
    return {
        path: {"p50_ms": round(statistics.median(v), 1),
               "p90_ms": round(sorted(v)[max(0, int(0.9 * len(v)) - 1)], 1), "runs_ms": v}
        for path, v in times.items()
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", default="http://127.0.0.1:8000")
    p.add_argument("--voice", default="af_heart")
    p.add_argument("--key", default="")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--paths", default="native,openai,elevenlabs,cartesia")
    p.add_argument("-o", "--output", default="")
    a = p.parse_args(argv)
    report = {
        "what": "first audio of one short sentence through each bot path (client clock)",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python bench/bot_paths.py", *(argv or sys.argv[1:])]),
        "host": {"cpus": os.cpu_count(), "machine": platform.machine(),
                 "loadavg_at_start": [round(x, 2) for x in os.getloadavg()]},
        "text": TEXT,
        "paths": asyncio.run(run(a)),
    }
    report["host"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(report, indent=1)
    print(text)
    if a.output:
        Path(a.output).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
