"""A voice per language in one utterance: each segment made and decoded by its language's
voice, its ``segment`` event naming both, and the phrase cache keyed on the voice each segment
was actually spoken with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from itertools import pairwise
from typing import Any

import numpy as np
import pytest

from emostream.codec.packetizer import OutputFormat
from emostream.config import Settings
from emostream.stream.service import SpeechService
from emostream.stream.streamer import Packet, UtteranceRequest, UtteranceStats
from emostream.voices.base import VoiceInfo
from emostream.voices.catalog import VoiceCatalog
from tests.stream.phrases.test_cache import Tone

PCM16 = OutputFormat(codec="pcm_s16le", sample_rate=16000)
TEXTS = ["Hello there,", "你好，朋友。", "See you."]


def tone(voice_id: str, freq: float, language: str) -> Tone:
    voice = Tone(voice_id, freq)
    voice.info = VoiceInfo(voice_id, "tone", language, 16000, ("speed", "speaker"), "")
    return voice


EN, ZH, ZH2 = (
    tone("en_a", 440.0, "en-US"),
    tone("zh_b", 660.0, "zh-CN"),
    tone("zh_c", 880.0, "zh-CN"),
)


async def speak(service: SpeechService, texts: list[str], voices: dict[str, Tone] | None,
                ) -> tuple[list[dict[str, Any]], bytes, UtteranceStats]:  # fmt: skip
    async def segments() -> AsyncIterator[str]:
        for text in texts:
            yield text

    request = UtteranceRequest(voice=EN, fmt=PCM16, stream_id=service.new_stream_id(),
                               voices=voices or {})  # fmt: skip
    events: list[dict[str, Any]] = []
    audio = b""
    async with service.utterance(request, segments(), transport="ws", cache=True) as (out, st):
        async for item in out:
            if isinstance(item, Packet):
                audio += item.data
            else:
                events.append(item.body)
    return events, audio, st


def pitch(pcm: bytes) -> float:
    """The loudest frequency of 16 kHz s16le audio."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float32)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    return float(np.fft.rfftfreq(len(x), 1 / 16000)[int(np.argmax(spectrum))])


@pytest.fixture
def service() -> Any:
    svc = SpeechService(Settings(), VoiceCatalog([EN, ZH, ZH2]))
    yield svc
    svc.close()


async def test_each_segment_is_spoken_and_announced_by_its_languages_voice(
    service: SpeechService,
) -> None:
    events, audio, _ = await speak(service, TEXTS, {"en": EN, "zh": ZH})
    segments = [e for e in events if e["type"] == "segment"]
    assert [(e["voice"], e["language"]) for e in segments] == [
        ("en_a", "en"), ("zh_b", "zh"), ("en_a", "en")]  # fmt: skip
    bounds = [round(e["start_ms"] * 16) * 2 for e in segments] + [len(audio)]
    heard = [pitch(audio[a:b]) for a, b in pairwise(bounds)]
    assert heard == pytest.approx([440.0, 660.0, 440.0], abs=15)
    plain, _, _ = await speak(service, TEXTS, None)  # one voice: as before, no new fields
    assert all("voice" not in e for e in plain if e["type"] == "segment")


async def test_the_cache_key_holds_the_voice_each_segment_was_spoken_with(
    service: SpeechService,
) -> None:
    _, first, stats = await speak(service, TEXTS, {"en": EN, "zh": ZH})
    assert not stats.cached
    _, again, stats = await speak(service, TEXTS, {"en": EN, "zh": ZH})
    assert stats.cached and again == first
    _, other, stats = await speak(service, TEXTS, {"en": EN, "zh": ZH2})  # another zh voice
    assert not stats.cached and other != first
    _, _, stats = await speak(service, TEXTS, None)  # one voice for all: another utterance
    assert not stats.cached
    english = ["Hello there,", "See you."]  # no Mandarin: the zh voice is never used
    await speak(service, english, {"en": EN, "zh": ZH})
    _, _, stats = await speak(service, english, {"en": EN, "zh": ZH2})
    assert stats.cached


async def test_voices_of_one_utterance_share_a_sample_rate(service: SpeechService) -> None:
    odd = Tone("odd", 500.0)
    odd.info = VoiceInfo("odd", "tone", "zh-CN", 22050, ("speed",), "")
    with pytest.raises(ValueError, match="share a sample rate"):
        await speak(service, TEXTS, {"en": EN, "zh": odd})
