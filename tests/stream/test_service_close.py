"""Closing the service waits for the model calls its runner's threads still run: a process that
finalized under a running ONNX Runtime call aborted (``terminate called without an active
exception``, exit 134) after a drain that cut utterances."""

from __future__ import annotations

import asyncio
import threading
import time

from emostream.config import Settings
from emostream.engine.runner import Joinable, ThreadRunner
from emostream.stream.service import SpeechService
from emostream.voices.catalog import VoiceCatalog


async def test_aclose_waits_for_the_running_model_call() -> None:
    runner = ThreadRunner(workers=2)
    assert isinstance(runner, Joinable)
    service = SpeechService(Settings(phrase_cache_bytes=0), VoiceCatalog(), runner=runner)
    ended: list[float] = []
    started = threading.Event()

    def model_call() -> None:
        started.set()
        time.sleep(0.4)
        ended.append(time.monotonic())

    call = asyncio.ensure_future(runner.run(model_call))
    await asyncio.to_thread(started.wait, 5)
    call.cancel()  # its stream went away: the call runs on, its result dropped
    await service.aclose()
    assert ended  # the call had ended when aclose returned
    assert runner.join(0.0)  # and every worker thread with it
