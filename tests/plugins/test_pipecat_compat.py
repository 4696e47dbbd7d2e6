"""Pipecat's own ElevenLabs and Cartesia services (``pipecat-ai[elevenlabs,cartesia]``),
unchanged but for their ``url``, in a real Pipecat pipeline against a live server's compatible
WebSockets: a turn (audio, word timestamps), a turn interrupted mid-stream
(``InterruptionFrame``: ElevenLabs' ``close_context``, Cartesia's ``cancel``) and the next
turn after it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import ServerThread
from tests.plugins.conftest import LONG_TEXT, import_framework

import_framework("pipecat")
import_framework("pipecat.services.elevenlabs.tts")
import_framework("pipecat.services.cartesia.tts")

from pipecat.frames.frames import (
    InterruptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    TTSStoppedFrame,
    TTSTextFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.cartesia.tts import CartesiaTTSService
from pipecat.services.elevenlabs.tts import ElevenLabsTTSService
from pipecat.workers.runner import WorkerRunner

from tests.plugins.test_pipecat import Recorder

RATE = 24000


def elevenlabs(server: ServerThread) -> Any:
    return ElevenLabsTTSService(
        api_key="unused", url=f"ws://127.0.0.1:{server.port}", sample_rate=RATE,
        settings=ElevenLabsTTSService.Settings(voice="joe", model="eleven_flash_v2_5"),
    )  # fmt: skip


def cartesia(server: ServerThread) -> Any:
    return CartesiaTTSService(
        api_key="unused", url=f"ws://127.0.0.1:{server.port}/tts/websocket", sample_rate=RATE,
        settings=CartesiaTTSService.Settings(voice="joe", model="sonic-2"),
    )  # fmt: skip


def seconds(frames: list[TTSAudioRawFrame]) -> float:
    return sum(len(f.audio) for f in frames) / 2 / RATE


@pytest.mark.parametrize("make", [elevenlabs, cartesia], ids=["elevenlabs", "cartesia"])
async def test_a_turn_an_interrupted_turn_and_the_next(server: ServerThread, make: Any) -> None:
    tts = make(server)
    sink, up = Recorder(FrameDirection.DOWNSTREAM), Recorder(FrameDirection.UPSTREAM)
    worker = PipelineWorker(Pipeline([up, tts, sink]),
                            params=PipelineParams(audio_out_sample_rate=RATE),
                            cancel_on_idle_timeout=False)  # fmt: skip
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _started(worker: Any, frame: Any) -> None:
        started.set()

    async def until(check: Any, timeout: float = 60) -> None:
        async with asyncio.timeout(timeout):
            while not check():
                await asyncio.sleep(0.01)

    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)
    run = asyncio.create_task(runner.run())
    try:
        await asyncio.wait_for(started.wait(), 30)
        await worker.queue_frames([TTSSpeakFrame("Hello from Pipecat's own service.")])
        await until(lambda: len(sink.of(TTSStoppedFrame)) == 1)
        first = sink.of(TTSAudioRawFrame)
        assert 1.0 < seconds(first) < 6.0
        await until(lambda: "service" in " ".join(str(f.text) for f in sink.of(TTSTextFrame)))
        await worker.queue_frames([TTSSpeakFrame(LONG_TEXT)])
        await until(lambda: seconds(sink.of(TTSAudioRawFrame)) - seconds(first) >= 0.5)
        await worker.queue_frames([InterruptionFrame()])
        await asyncio.sleep(0.3)
        before = len(sink.of(TTSAudioRawFrame))
        await worker.queue_frames([TTSSpeakFrame("Sorry, go ahead.")])
        await until(lambda: len(sink.of(TTSStoppedFrame)) >= 2 and
                    seconds(sink.of(TTSAudioRawFrame)[before:]) > 0.5)  # fmt: skip
        after = sink.of(TTSAudioRawFrame)[before:]
        assert seconds(after) < 4.0  # the next turn's audio, not the rest of the long one
    finally:
        await worker.cancel()
        await asyncio.wait_for(run, 30)
