"""The engine loop's stats (EngineStats) and the loop itself with stages that cost nothing."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from emostream.engine.client import EngineClient
from emostream.engine.core import EngineCore
from emostream.engine.stats import EngineStats
from emostream.voices.base import BatchedStage, Controls, Latent, VoiceInfo

HOP = 256


def test_report_adds_up_one_interval() -> None:
    now = [10.0]
    stats = EngineStats(clock=lambda: now[0])
    seconds = stats.seconds  # the loop keeps this reference across reports
    stats.iteration(queued=4, idle=False)
    stats.iteration(queued=0, idle=True)
    seconds["wait"] += 0.5
    for items in (1, 3, 3, 32):
        stats.batch("v", items=items, rows=4 if items < 4 else 32, length=96,
                    real_cells=76 * items, schedule_s=0.001, prep_s=0.002, run_s=0.01,
                    post_s=0.0, deliver_s=0.001)  # fmt: skip
    stats.stage("v").waits += [0.001, 0.002, 0.010]
    now[0] = 12.0
    r = stats.report({"load": {"queued": 0}})
    assert r["interval_s"] == 2.0 and r["load"] == {"queued": 0}
    loop = r["loop"]
    assert loop["iterations"] == 2 and loop["idle"] == 1 and loop["queued_max"] == 4
    assert loop["busy"] == 0.75 and loop["run_s"] == 0.04 and loop["host_s"] == 0.016
    assert loop["other_s"] == pytest.approx(2.0 - 0.5 - 0.056)
    v = r["stages"]["v"]
    assert v["batches"] == 4 and v["items"] == 39 and v["items_per_s"] == 19.5
    assert v["sizes"] == {"1": 1, "3": 2, "32": 1} and v["lengths"] == {"96": 4}
    assert v["batch_p50"] == 3 and v["batch_p95"] == 32 and v["batch_max"] == 32
    assert v["rows_padded"] == 44 and v["fill"] == round(76 * 39 / (44 * 96), 3)
    assert v["run_ms_per_batch"] == 10.0 and v["host_ms_per_batch"] == 4.0
    assert v["wait_ms"]["p50"] == 2.0 and v["wait_ms"]["max"] == 10.0
    # the next interval starts empty; totals carry on
    seconds["wait"] += 1.0
    now[0] = 14.0
    again = stats.report()
    assert again["stages"] == {} and again["loop"]["iterations"] == 0
    assert again["totals"] == {"batches": 4, "items": 39}
    assert again["loop"]["wait_s"] == 1.0 and again["loop"]["busy"] == 0.5


def _decode16(mel: np.ndarray) -> np.ndarray:
    """A backend answering in fp16 (as the CUDA one does): each frame's first bin, repeated."""
    return np.repeat(mel[:, 0, :], HOP, axis=1).astype(np.float16)


def _acoustic(requests: list[Any]) -> list[Latent]:
    return [Latent(np.full((80, 20), r, np.float32), np.full(4, 5, np.int64), ["a"] * 4)
            for r in requests]  # fmt: skip


STAGES = (
    BatchedStage("t-acoustic", "acoustic", _acoustic, (1, 2, 4), size=lambda r: 8),
    BatchedStage("t-decode", "decode", _decode16, (1, 2, 4, 8), (32, 64), -11.5),
)


class _Voice:
    info = VoiceInfo("t", "t", "en", 22050, ())
    hop_length = HOP
    context_frames = 0

    def batched_stages(self) -> tuple[BatchedStage, ...]:
        return STAGES

    def prepare(self, text: str, controls: Controls) -> float:
        return float(len(text))

    def acoustic(self, text: str, controls: Controls) -> Latent:
        raise NotImplementedError

    def decode(self, frames: Any) -> Any:
        raise NotImplementedError


def test_loop_counts_batches_and_answers_fp16_as_float32(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    core = EngineCore({s.key: s for s in STAGES}, stats_interval_s=0.05)
    path = str(tmp_path / "engine.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    stop = threading.Event()
    caplog.set_level(logging.INFO, logger="emostream.engine.core")
    loop = threading.Thread(target=core.serve, args=(listener,), kwargs={"stop": stop.is_set})
    loop.start()
    voice = _Voice()
    rng = np.random.default_rng(0)
    windows = [rng.standard_normal((80, n)).astype(np.float32) for n in (20, 30, 50, 60)]

    async def run() -> None:
        client = EngineClient(path)
        await client.start()
        try:
            # the welcome told the decode stage's lengths: the streamer fills windows to them
            assert client.decode_buckets(voice) == (32, 64)
            calls = [client.decode(voice, w, stream_id=f"s{k}", pad_side="left")
                     for k, w in enumerate(windows)]  # fmt: skip
            outs = await asyncio.gather(*calls)
            for w, out in zip(windows, outs, strict=True):
                assert out.dtype == np.float32 and out.shape == (w.shape[1] * HOP,)
                want = np.repeat(w[0], HOP).astype(np.float16).astype(np.float32)
                assert np.array_equal(out, want)
            latent = await client.acoustic(voice, "hello", Controls())
            assert latent.frames.shape == (80, 20) and latent.frames[0, 0] == 5.0
            await asyncio.sleep(0.12)  # at least one stats line
        finally:
            client.close()

    try:
        asyncio.run(run())
    finally:
        stop.set()
        loop.join(5)
        core.close()
        listener.close()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("engine stats ")]
    assert lines
    reports = [json.loads(line.removeprefix("engine stats ")) for line in lines]
    decode = [r["stages"]["t-decode"] for r in reports if "t-decode" in r["stages"]]
    assert sum(d["items"] for d in decode) == 4
    assert sum(sum(d["lengths"].values()) for d in decode) == sum(d["batches"] for d in decode)
    acoustic = [r["stages"]["t-acoustic"] for r in reports if "t-acoustic" in r["stages"]]
    assert sum(a["items"] for a in acoustic) == 1
    assert sum(r["loop"]["calls_in"].get("t-decode", 0) for r in reports) == 4
    assert sum(r["loop"]["msgs_out"] for r in reports) >= 5  # welcome + 5 answers
    assert all(set(r) >= {"loop", "stages", "load", "cpu_s", "cost_ms"} for r in reports)
    assert any("t-decode" in r["cost_ms"] for r in reports)


def test_acoustic_linger_reaches_only_acoustic_stages() -> None:
    core = EngineCore({s.key: s for s in STAGES}, acoustic_linger_s=0.04)
    assert core.scheduler.stages["t-acoustic"].linger_s == 0.04
    assert core.scheduler.stages["t-decode"].linger_s == 0.0
    assert EngineCore({s.key: s for s in STAGES}).scheduler.stages["t-acoustic"].linger_s == 0.0
    core.close()


def test_vocoder_linger_reaches_the_other_stages() -> None:
    core = EngineCore({s.key: s for s in STAGES}, acoustic_linger_s=0.04, vocoder_linger_s=0.03)
    assert core.scheduler.stages["t-acoustic"].linger_s == 0.04
    assert core.scheduler.stages["t-decode"].linger_s == 0.03
    core.close()
