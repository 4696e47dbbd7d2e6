"""A refined clone through the speech service: once its refinement settles the service speaks
it with the timbre (the built voice is replaced, in this process at once and in another one at
its next check), and the phrase cache never replays the zero-shot audio for it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.codec.packetizer import OutputFormat
from emostream.config import Settings
from emostream.stream.service import SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest, UtteranceStats
from emostream.voices.acoustic import AcousticFamily
from emostream.voices.catalog import VoiceCatalog, load_acoustic_family
from emostream.voices.cloning.refine_state import (
    Refined,
    RefineState,
    begin,
    succeed,
)
from emostream.voices.cloning.registry import RefineUpdate, VoiceRegistry

pytestmark = pytest.mark.slow

TEXT = ["Thanks for the follow,", "welcome to the stream."]
PCM = OutputFormat(codec="pcm_s16le", sample_rate=24000)


@pytest.fixture(scope="module")
def family() -> AcousticFamily:
    loaded = load_acoustic_family(Settings(acoustic="on"))
    assert loaded is not None
    return loaded


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[VoiceRegistry]:
    reg = VoiceRegistry(tmp_path / "voices.sqlite3", keep_clips=False)
    yield reg
    reg.close()


def _service(family: AcousticFamily, registry: VoiceRegistry, **kwargs: Any) -> SpeechService:
    catalog = VoiceCatalog()
    catalog.family = family
    return SpeechService(Settings(), catalog, registry=registry, **kwargs)


def _clone(registry: VoiceRegistry, family: AcousticFamily) -> str:
    emb = family.speakers["af_heart"]  # any GE2E-space vector will do
    return registry.add(name="Me", embedding=emb, encoder="ge2e", clip_sha256="c" * 64,
                        duration_s=8.0, speech_s=7.0).id  # fmt: skip


def _refine(registry: VoiceRegistry, voice_id: str) -> npt.NDArray[np.float32]:
    """What the refinement queue writes when a job succeeds (a tilt: brighter, 1 nat)."""
    timbre = np.stack([np.ones(80), np.linspace(-0.5, 0.5, 80)]).astype(np.float32)
    refined = Refined(timbre, {"ge2e_similarity_after": 0.9}, 1.0, "c" * 64)

    def move(v: Any) -> RefineUpdate:
        begun = begin(v.refine, job="j", now=1.0, stale_after_s=600.0)
        return RefineUpdate(succeed(begun, job="j", refined=refined, now=2.0))

    assert registry.update_refine(voice_id, move) is not None
    return timbre


async def _speak(service: SpeechService, voice_id: str) -> tuple[bytes, UtteranceStats]:
    voice = service.voice(voice_id)
    assert voice is not None

    async def segments() -> AsyncIterator[str]:
        for text in TEXT:
            yield text

    req = UtteranceRequest(voice=voice, fmt=PCM, stream_id=service.new_stream_id())
    audio = b""
    async with service.utterance(req, segments(), transport="ws", cache=True) as (out, stats):
        async for item in out:
            if isinstance(item, Packet):
                audio += item.data
    return audio, stats


async def test_the_cache_never_replays_the_zero_shot_audio(
    family: AcousticFamily, registry: VoiceRegistry
) -> None:
    service = _service(family, registry)
    try:
        vid = _clone(registry, family)
        zero_shot, s1 = await _speak(service, vid)
        again, s2 = await _speak(service, vid)
        assert not s1.cached and s2.cached and again == zero_shot  # the cache is on
        timbre = _refine(registry, vid)
        service.refined(vid, RefineState.REFINED)  # what the queue calls when it settles
        voice = service.voice(vid)
        assert voice is not None
        np.testing.assert_array_equal(getattr(voice, "timbre", None), timbre)
        refined, s3 = await _speak(service, vid)
        assert not s3.cached, "the zero-shot phrase was replayed for the refined voice"
        assert refined != zero_shot
        a = np.frombuffer(zero_shot, np.int16).astype(np.float32)
        b = np.frombuffer(refined, np.int16).astype(np.float32)
        assert len(a) == len(b) and np.abs(a - b).mean() > 0.05 * np.abs(a).mean()
        replay, s4 = await _speak(service, vid)
        assert s4.cached and replay == refined  # the refined phrase is what is kept now
        value = service.metrics.registry.get_sample_value
        assert value("emostream_clone_refinements_total", {"outcome": "refined"}) == 1
    finally:
        service.close()


async def test_another_process_picks_the_refinement_up_at_its_next_check(
    family: AcousticFamily, registry: VoiceRegistry
) -> None:
    """A second worker on the same registry was not told: it rebuilds the voice once its
    built one is ``clone_refresh_s`` old."""
    other = _service(family, registry, clone_refresh_s=0.0)
    lazy = _service(family, registry, clone_refresh_s=3600.0)
    try:
        vid = _clone(registry, family)
        for service in (other, lazy):
            assert getattr(service.voice(vid), "timbre", 0) is None
        timbre = _refine(registry, vid)
        np.testing.assert_array_equal(getattr(other.voice(vid), "timbre", None), timbre)
        assert getattr(lazy.voice(vid), "timbre", 0) is None  # not checked again yet
        registry.delete(vid)
        assert other.voice(vid) is None
    finally:
        other.close()
        lazy.close()
