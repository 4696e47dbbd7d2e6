"""One enrolment path: an upload (POST /v1/voices) and an inline reference clip share the intake,
the encoder and the embedding cache."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.voices.cloning.cache import EmbeddingCache
from emostream.voices.cloning.clip import Clip, ClipError, ClipIntake, ClipLimits
from emostream.voices.cloning.enroll import Enroller
from tests.voices.voice_fixtures import to_bytes

Speech = tuple[npt.NDArray[np.float32], int]


class StubEncoder:
    version = "stub-1"

    def __init__(self) -> None:
        self.calls = 0

    def embed_clip(self, clip: Clip) -> npt.NDArray[np.float32]:
        self.calls += 1
        return np.full(256, clip.speech_s, dtype=np.float32)


@dataclass(frozen=True)
class CountingIntake(ClipIntake):
    decoded: list[int] = field(default_factory=list)

    def __call__(self, data: bytes) -> Clip:
        self.decoded.append(len(data))
        return super().__call__(data)


async def test_enroll_gives_the_clip_and_its_embedding(speech: Speech) -> None:
    encoder = StubEncoder()
    enrolment = await Enroller(ClipIntake(), encoder).enroll(to_bytes(*speech))
    assert enrolment.clip.sample_rate == 16000 and enrolment.clip.speech_s >= 3.0
    assert enrolment.embedding.shape == (256,) and encoder.calls == 1
    assert enrolment.embedding[0] == pytest.approx(enrolment.clip.speech_s)


async def test_upload_and_reference_share_the_cache(speech: Speech) -> None:
    data = to_bytes(*speech)
    encoder, intake = StubEncoder(), CountingIntake()
    enroller = Enroller(intake, encoder, cache=EmbeddingCache())
    uploaded = await enroller.enroll(data)
    assert (encoder.calls, len(intake.decoded)) == (1, 1)
    # the same bytes as an inline reference: from the cache, not decoded again
    referenced = await enroller.embed(data)
    assert np.array_equal(referenced, uploaded.embedding)
    assert (encoder.calls, len(intake.decoded)) == (1, 1)
    # uploaded again: decoded (the registry keeps the clip) but not embedded again
    again = await enroller.enroll(data)
    assert np.array_equal(again.embedding, uploaded.embedding)
    assert (encoder.calls, len(intake.decoded)) == (1, 2)


async def test_reference_first_then_upload(speech: Speech) -> None:
    data = to_bytes(*speech)
    encoder = StubEncoder()
    enroller = Enroller(ClipIntake(), encoder, cache=EmbeddingCache())
    first = await enroller.embed(data)
    assert np.array_equal((await enroller.enroll(data)).embedding, first)
    assert encoder.calls == 1


async def test_without_a_cache_every_clip_is_embedded(speech: Speech) -> None:
    data = to_bytes(*speech)
    encoder = StubEncoder()
    enroller = Enroller(ClipIntake(), encoder)
    await enroller.embed(data)
    await enroller.enroll(data)
    assert encoder.calls == 2


@pytest.mark.parametrize("path", ["enroll", "embed"])
async def test_bad_clips_raise_and_nothing_is_embedded(path: str, speech: Speech) -> None:
    audio, rate = speech
    encoder = StubEncoder()
    enroller = Enroller(ClipIntake(), encoder, cache=EmbeddingCache())
    call: Callable[[bytes], Any] = getattr(enroller, path)
    with pytest.raises(ClipError) as silent:
        await call(to_bytes(np.zeros_like(audio), rate))
    assert silent.value.code == "silent" and encoder.calls == 0


async def test_oversized_reference_is_refused_before_decoding(speech: Speech) -> None:
    data = to_bytes(*speech)
    intake = ClipIntake(limits=ClipLimits(max_bytes=len(data) - 1))
    enroller = Enroller(intake, StubEncoder())
    assert enroller.max_bytes == len(data) - 1
    with pytest.raises(ClipError) as big:
        await enroller.embed(data)
    assert big.value.code == "oversized" and big.value.http_status == 413


async def test_blocking_work_goes_through_offload(speech: Speech) -> None:
    ran: list[str] = []

    async def offload(fn: Callable[[], Any]) -> Any:
        ran.append(getattr(fn, "__name__", "fn"))
        return fn()

    enroller = Enroller(ClipIntake(), StubEncoder(), offload=offload)
    await enroller.enroll(to_bytes(*speech))
    assert len(ran) == 2  # decode, embed
    assert await enroller.run(lambda: 7) == 7 and len(ran) == 3
