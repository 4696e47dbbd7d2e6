"""Measure a server's packet arrival schedule and what a playout buffer needs to be gapless.

Speaks TEXT over /v1/stream N times and prints, per run, as JSON: first packet time, the
start delay after the first packet a player needs for zero underruns (the max of
arrival_k - k * 20 ms over packets k), and the underruns a player with a PREBUFFER_MS
pre-buffer (start once that much audio is queued, as client_js does) would have.

    python client_js/scripts/playout_probe.py --url ws://127.0.0.1:8000/v1/stream \
        [--text "..."] [--n 3] [--prebuffer-ms 60]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import websockets

DEFAULT_TEXT = "Hello! This is a streaming test of the browser client, and it should play without a single gap."


def simulate(arrivals_ms: list[float], frame_ms: float, prebuffer_ms: float) -> dict[str, float]:
    """Replay arrivals through a pre-buffer that grows by 40 ms after each underrun."""
    underruns = 0
    prebuffer = prebuffer_ms
    clock = None  # time the next queued packet starts playing
    queued_until = 0.0  # playout time at which queued audio runs out
    i = 0
    n = len(arrivals_ms)
    waits = []
    while i < n:
        if clock is None:
            # buffering: wait until `prebuffer` ms are queued (packets arriving)
            j = i
            while j < n and (j - i + 1) * frame_ms < prebuffer:
                j += 1
            j = min(j, n - 1)
            clock = arrivals_ms[j]
            waits.append(clock - arrivals_ms[i])
            queued_until = clock
        # play packet i at max(queued_until, clock)
        start = queued_until
        if arrivals_ms[i] > start:  # the packet is late: underrun
            underruns += 1
            prebuffer = min(300.0, prebuffer + 40.0)
            clock = None
            continue
        queued_until = start + frame_ms
        i += 1
    return {"underruns": underruns, "final_prebuffer_ms": prebuffer}


async def run_once(url: str, text: str, fmt: dict[str, object]) -> dict[str, object]:
    async with websockets.connect(url, compression=None, max_size=None) as ws:
        t0 = time.perf_counter()
        await ws.send(json.dumps({"type": "start", "format": fmt}))
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        arrivals: list[float] = []
        events: list[tuple[float, dict[str, object]]] = []
        frame_ms = 20.0
        while True:
            msg = await ws.recv()
            now = (time.perf_counter() - t0) * 1000
            if isinstance(msg, bytes):
                arrivals.append(now)
                continue
            ev = json.loads(msg)
            events.append((now, ev))
            if ev.get("type") == "started":
                frame_ms = float(ev.get("frame_ms", 20))
            if ev.get("type") in ("done", "error"):
                break
    done = events[-1][1]
    need = max(a - k * frame_ms for k, a in enumerate(arrivals)) - arrivals[0] if arrivals else 0.0
    # Slack: how early each packet came for a player that starts at the first packet; the
    # smallest value is the margin the server leaves (negative = a gap without pre-buffer).
    slack = [arrivals[0] + k * frame_ms - a for k, a in enumerate(arrivals)]
    worst = min(range(len(slack)), key=slack.__getitem__) if slack else 0
    # Gaps between consecutive bursts (> 5 ms apart), to show the chunk schedule.
    bursts = []
    start = 0
    for k in range(1, len(arrivals) + 1):
        if k == len(arrivals) or arrivals[k] - arrivals[k - 1] > 5.0:
            bursts.append({"at_ms": round(arrivals[start], 1), "packets": k - start})
            start = k
    return {
        "first_packet_ms": round(arrivals[0], 1) if arrivals else None,
        "packets": len(arrivals),
        "audio_ms": done.get("audio_ms"),
        "server_first_audio_ms": done.get("first_audio_ms"),
        "start_delay_needed_ms": round(need, 1),
        "min_slack_ms": round(slack[worst], 1) if slack else None,
        "min_slack_at_packet": worst,
        "segments_at_ms": [round(t, 1) for t, e in events if e.get("type") == "segment"],
        "bursts": bursts,
        "frame_ms": frame_ms,
        "arrivals_ms": arrivals,
    }


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--text", default=DEFAULT_TEXT)
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--prebuffer-ms", type=float, default=60.0)
    ap.add_argument("--codec", default="opus")
    ap.add_argument("--rate", type=int, default=48000)
    args = ap.parse_args()
    for _ in range(args.n):
        r = await run_once(args.url, args.text, {"codec": args.codec, "sample_rate": args.rate})
        arrivals = r.pop("arrivals_ms")
        assert isinstance(arrivals, list)
        r["simulated"] = simulate(arrivals, float(r["frame_ms"]), args.prebuffer_ms)  # type: ignore[arg-type]
        print(json.dumps(r))


if __name__ == "__main__":
    asyncio.run(main())
