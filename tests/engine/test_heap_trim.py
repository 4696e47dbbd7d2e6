"""After an utterance the heap is trimmed: at once, or when the interval since the last trim is
up; one trim pending at a time, none left out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np
import numpy.typing as npt
import pytest

from emostream.config import Settings
from emostream.engine.heap_trim import HeapTrimmer, libc_malloc_trim
from emostream.stream import service as service_module
from emostream.stream.service import SpeechService
from emostream.stream.streamer import UtteranceRequest
from emostream.voices.base import Controls, Latent, VoiceInfo
from emostream.voices.catalog import VoiceCatalog


def test_the_rule() -> None:
    trimmer = HeapTrimmer(5.0)
    assert trimmer.request(100.0) == 0.0  # the first: at once
    assert trimmer.request(100.5) is None  # pending: it covers this one too
    trimmer.trimmed(100.1)
    assert trimmer.request(102.0) == pytest.approx(3.1)  # when the interval is up
    assert trimmer.request(103.0) is None
    trimmer.trimmed(105.1)
    assert trimmer.request(111.0) == 0.0
    off = HeapTrimmer(0.0)
    assert off.request(1.0) is None and off.request(1e9) is None


def test_libc_trim_runs_here() -> None:
    trim = libc_malloc_trim()
    assert trim is not None  # glibc (the CI image)
    assert trim() in (True, False)


class _Voice:
    info = VoiceInfo("t", "t", "en", 16000, ())
    hop_length = 160
    context_frames = 2

    def acoustic(self, text: str, controls: Controls) -> Latent:
        return Latent(np.zeros((1, 50), np.float32))

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        return np.zeros(frames.shape[1] * self.hop_length, np.float32)


async def _speak(service: SpeechService) -> None:
    async def one() -> AsyncIterator[str]:
        yield "hello"

    req = UtteranceRequest(voice=_Voice(), stream_id=service.new_stream_id())
    async with service.utterance(req, one(), transport="ws") as (out, _):
        async for _item in out:
            pass


async def test_the_service_trims_after_utterances(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[float] = []
    loop = asyncio.get_running_loop()

    def trim() -> bool:
        trims.append(loop.time())
        return True

    monkeypatch.setattr(service_module, "libc_malloc_trim", lambda: trim)
    service = SpeechService(
        Settings(memory_trim_interval_s=0.3, phrase_cache_bytes=0),
        VoiceCatalog([_Voice()]),
    )
    try:
        t0 = loop.time()
        await _speak(service)
        await asyncio.sleep(0.05)
        assert len(trims) == 1  # at once
        for _ in range(3):  # three more within the interval: one trim, when it is up
            await _speak(service)
        await asyncio.sleep(0.05)
        assert len(trims) == 1
        await asyncio.sleep(0.4)
        assert len(trims) == 2 and trims[1] - t0 >= 0.3
    finally:
        await service.aclose()
    never = SpeechService(
        Settings(memory_trim_interval_s=0, phrase_cache_bytes=0), VoiceCatalog([_Voice()])
    )
    try:
        await _speak(never)
        await asyncio.sleep(0.05)
        assert len(trims) == 2
    finally:
        await never.aclose()
