"""``emostream bench first-audio``: first-audio latency and RTF against a running server.

For each utterance it opens (or reuses) a WebSocket, sends start + text + end, and
times the first binary frame (client clock). Prints JSON with p50/p95/p99. The sentences
repeat, so every start asks for ``cache: false`` (live synthesis) unless ``--cache`` measures
the phrase cache instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

SENTENCES = [
    "Hello there, how are you today?",
    "Thanks for the follow, welcome to the stream!",
    "That is a great question, let me think about it.",
    "Sure, I can help you with that.",
    "Good morning everyone, the weather looks lovely.",
    "Wow, that was an amazing play!",
    "Please remember to stay hydrated.",
    "I am not sure, but I will find out for you.",
]


def host_info() -> dict[str, Any]:
    """Where the client ran (the server is usually on the same loopback host)."""
    import os
    import platform

    model = platform.processor()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model
            )
    except OSError:
        pass
    return {"cpus": os.cpu_count(), "cpu_model": model, "loadavg_1m": round(os.getloadavg()[0], 2)}


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


async def one_utterance(
    ws: Any, text: str, *, voice: str | None, codec: str, rate: int, cache: bool = False
) -> dict[str, Any]:
    start: dict[str, Any] = {"type": "start", "format": {"codec": codec, "sample_rate": rate}}
    if voice:
        start["voice"] = voice
    if not cache:
        start["cache"] = False
    t0 = time.perf_counter()
    await ws.send(json.dumps(start))
    await ws.send(json.dumps({"type": "text", "text": text}))
    await ws.send(json.dumps({"type": "end"}))
    first: float | None = None
    packets = 0
    while True:
        msg = await ws.recv()
        if isinstance(msg, bytes):
            packets += 1
            if first is None:
                first = time.perf_counter() - t0
            continue
        event = json.loads(msg)
        if event["type"] == "error":
            raise RuntimeError(f"server error: {event}")
        if event["type"] == "done":
            return {
                "first_audio_ms": None if first is None else 1000 * first,
                "total_ms": 1000 * (time.perf_counter() - t0),
                "audio_ms": event["audio_ms"],
                "server_rtf": event["rtf"],
                "packets": packets,
                "cached": bool(event.get("cached")),
            }


async def run(
    url: str,
    n: int,
    concurrency: int,
    voice: str | None,
    codec: str,
    rate: int,
    warmup: int,
    cache: bool = False,
) -> dict[str, Any]:
    import websockets

    results: list[dict[str, Any]] = []
    counter = iter(range(n + warmup * concurrency))

    async def worker(wid: int) -> None:
        async with websockets.connect(url, compression=None, max_size=None) as ws:
            for _ in range(warmup):
                next(counter, None)
                await one_utterance(
                    ws,
                    SENTENCES[wid % len(SENTENCES)],
                    voice=voice,
                    codec=codec,
                    rate=rate,
                    cache=cache,
                )
            while (i := next(counter, None)) is not None and len(results) < n:
                results.append(
                    await one_utterance(
                        ws,
                        SENTENCES[i % len(SENTENCES)],
                        voice=voice,
                        codec=codec,
                        rate=rate,
                        cache=cache,
                    )
                )

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    wall = time.perf_counter() - t0
    firsts = [r["first_audio_ms"] for r in results if r["first_audio_ms"] is not None]
    audio_s = sum(r["audio_ms"] for r in results) / 1000
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(["emostream", "bench", "first-audio", *sys.argv[3:]])
        if len(sys.argv) > 2
        else "",
        "url": url,
        "host": host_info(),
        "utterances": len(results),
        "concurrency": concurrency,
        "phrase_cache": "used" if cache else "bypassed (cache: false)",
        "cached_utterances": sum(1 for r in results if r["cached"]),
        "first_audio_ms": {
            "p50": round(percentile(firsts, 0.5), 1),
            "p95": round(percentile(firsts, 0.95), 1),
            "p99": round(percentile(firsts, 0.99), 1),
            "min": round(min(firsts), 1) if firsts else None,
            "max": round(max(firsts), 1) if firsts else None,
        },
        "server_rtf_mean": round(
            statistics.fmean(r["server_rtf"] for r in results if r["server_rtf"]), 4
        ),
        "aggregate_realtime_x": round(audio_s / wall, 2),
        "audio_s": round(audio_s, 2),
        "wall_s": round(wall, 2),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="emostream bench first-audio")
    p.add_argument("--url", default="ws://127.0.0.1:8000/v1/stream")
    p.add_argument("--n", type=int, default=40, help="measured utterances")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--warmup", type=int, default=2, help="unmeasured utterances per connection")
    p.add_argument("--voice", default=None)
    p.add_argument("--codec", default="opus", choices=["opus", "pcm_s16le"])
    p.add_argument("--sample-rate", type=int, default=48000)
    p.add_argument(
        "--cache", action="store_true", help="let the phrase cache answer (default: cache: false)"
    )
    p.add_argument("-o", "--output", default=None, help="also write the JSON here")
    a = p.parse_args(argv)
    report = asyncio.run(
        run(a.url, a.n, a.concurrency, a.voice, a.codec, a.sample_rate, a.warmup, a.cache)
    )
    text = json.dumps(report, indent=2)
    print(text)
    if a.output:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    return 0
