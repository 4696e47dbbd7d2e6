"""Round-trip cost of the engine channel (shared memory + Unix socket) on this machine.

An engine process (emostream.engine.core.EngineCore) with two stages that do no
model work: ``decode`` returns zeros ``[B, L * 256]``, ``acoustic`` a zero mel ``[80, 200]``.
One EngineClient awaits calls one at a time (and, with --concurrency, N at once), so the
time measured is the channel and the engine loop: a 32-frame mel window in (10 KiB) and
8192 samples out (32 KiB); an acoustic call (a small pickled request in, a 200-frame mel
out through the slot). Writes JSON (date, host, command, figures in microseconds).

    PYTHONPATH=server .venv/bin/python bench/engine_channel.py --n 2000 \
        -o bench/results/2026-12-03-cpu2-engine-channel.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import signal
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from emostream.engine.client import EngineClient
from emostream.engine.core import EngineCore
from emostream.voices.base import BatchedStage, Controls, Latent, VoiceInfo


def _decode(mel: Any) -> Any:
    return np.zeros((mel.shape[0], mel.shape[2] * 256), dtype=np.float32)


def _acoustic(requests: list[Any]) -> list[Latent]:
    return [Latent(np.zeros((80, 200), np.float32), np.full(20, 10, np.int64), ["a"] * 20)
            for _ in requests]  # fmt: skip


STAGES = (
    BatchedStage("echo-acoustic", "acoustic", _acoustic, (1, 2, 4, 8), size=lambda r: 40),
    BatchedStage("echo-decode", "decode", _decode, (1, 2, 4, 8, 16, 32), (32, 64, 96)),
)


class EchoVoice:
    info = VoiceInfo("echo", "echo", "en", 22050, ())
    hop_length = 256
    context_frames = 0

    def batched_stages(self) -> tuple[BatchedStage, ...]:
        return STAGES

    def prepare(self, text: str, controls: Controls) -> dict[str, Any]:
        return {"units": list(range(40)), "speaker": np.zeros(256, np.float32)}

    def acoustic(self, text: str, controls: Controls) -> Latent:
        raise NotImplementedError

    def decode(self, frames: Any) -> Any:
        raise NotImplementedError


def _engine(path: str) -> None:
    core = EngineCore({s.key: s for s in STAGES})
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    stopping: list[int] = []  # terminate() stops the loop, which then frees its blocks
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        core.serve(listener, stop=lambda: bool(stopping))
    finally:
        core.close()
        listener.close()


def _us(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {
        "n": len(xs),
        "mean_us": round(1e6 * statistics.fmean(xs), 1),
        "p50_us": round(1e6 * xs[len(xs) // 2], 1),
        "p95_us": round(1e6 * xs[int(0.95 * (len(xs) - 1))], 1),
        "p99_us": round(1e6 * xs[int(0.99 * (len(xs) - 1))], 1),
    }


async def _measure(path: str, n: int, concurrency: int) -> dict[str, Any]:
    client = EngineClient(path)
    await client.start()
    voice = EchoVoice()
    mel = np.random.default_rng(0).standard_normal((80, 32)).astype(np.float32)
    out: dict[str, Any] = {}
    try:
        for _ in range(50):  # warm-up
            await client.decode(voice, mel, stream_id="w")  # type: ignore[arg-type]
        lat = []
        for i in range(n):
            t0 = time.perf_counter()
            audio = await client.decode(voice, mel, stream_id=f"s{i % 8}")  # type: ignore[arg-type]
            lat.append(time.perf_counter() - t0)
        assert audio.shape == (8192,)
        out["decode_32_frames_to_8192_samples"] = _us(lat)
        lat = []
        for _ in range(n // 2):
            t0 = time.perf_counter()
            latent = await client.acoustic(voice, "x", Controls())  # type: ignore[arg-type]
            lat.append(time.perf_counter() - t0)
        assert latent.frames.shape == (80, 200)
        out["acoustic_request_to_200_frame_mel"] = _us(lat)
        rounds = max(1, n // concurrency)
        t0 = time.perf_counter()
        for r in range(rounds):
            await asyncio.gather(*(client.decode(voice, mel, stream_id=f"c{k}")  # type: ignore[arg-type]
                                   for k in range(concurrency)))  # fmt: skip
        took = time.perf_counter() - t0
        out[f"decode_{concurrency}_in_flight"] = {
            "calls": rounds * concurrency,
            "calls_per_s": round(rounds * concurrency / took, 1),
            "wall_per_round_us": round(1e6 * took / rounds, 1),
        }
    finally:
        client.close()
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("-o", "--out", default="")
    args = p.parse_args()
    path = str(Path(tempfile.mkdtemp(prefix="emostream-chan-")) / "engine.sock")
    proc = mp.get_context("spawn").Process(target=_engine, args=(path,), daemon=True)
    proc.start()
    while not os.path.exists(path):
        time.sleep(0.02)
    try:
        figures = asyncio.run(_measure(path, args.n, args.concurrency))
    finally:
        proc.terminate()
        proc.join(5)
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "python": sys.version.split()[0],
            "load_avg": os.getloadavg(),
        },
        "command": "PYTHONPATH=server .venv/bin/python bench/engine_channel.py "
        + " ".join(sys.argv[1:]),
        "what": "engine channel round trip: EngineClient -> Unix socket + shared-memory slot "
        "-> EngineCore (stages that do no model work) -> back; one call in flight unless "
        "stated",
        "figures": figures,
    }
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
