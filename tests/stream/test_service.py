"""SpeechService's built-voice caches are bounded LRUs: an evicted voice is built again, from
the registry (a clone) or the embedding path (an inline reference clip), on its next use."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.config import Settings
from emostream.stream.service import SpeechService
from emostream.voices.base import VoiceInfo
from emostream.voices.catalog import VoiceCatalog
from emostream.voices.cloning.registry import VoiceRegistry


class Built:
    """What the stub family builds: a voice's id and embedding."""

    def __init__(
        self,
        voice_id: str,
        embedding: npt.NDArray[np.float32],
        timbre: npt.NDArray[np.float32] | None = None,
    ) -> None:
        self.info = VoiceInfo(voice_id, "stub", "multi", 22050, ("speaker",), "")
        self.embedding = embedding
        self.timbre = timbre


class StubFamily:
    """Speaks any embedding; counts the voices it builds."""

    def __init__(self) -> None:
        self.built: list[str] = []

    def voice(
        self, voice_id: str, embedding: npt.NDArray[np.float32], *, language: str, description: str
    ) -> Built:
        self.built.append(voice_id)
        return Built(voice_id, embedding)

    def clone(
        self,
        voice_id: str,
        embedding: npt.NDArray[np.float32],
        *,
        description: str,
        timbre: npt.NDArray[np.float32] | None = None,
    ) -> Built:
        built = self.voice(voice_id, embedding, language="multi", description=description)
        built.timbre = timbre
        return built


def _vec(seed: int) -> npt.NDArray[np.float32]:
    return np.random.default_rng(seed).standard_normal(256).astype(np.float32)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[VoiceRegistry]:
    reg = VoiceRegistry(tmp_path / "voices.sqlite3", keep_clips=False)
    yield reg
    reg.close()


def _service(
    registry: VoiceRegistry, family: StubFamily, settings: Settings | None = None, **kwargs: Any
) -> SpeechService:
    catalog = VoiceCatalog()
    catalog.family = family  # type: ignore[assignment]
    return SpeechService(settings or Settings(), catalog, registry=registry, **kwargs)


def _clone(registry: VoiceRegistry, seed: int) -> str:
    return registry.add(
        name=f"v{seed}",
        embedding=_vec(seed),
        encoder="test",
        clip_sha256=f"{seed:064x}",
        duration_s=5.0,
        speech_s=4.0,
    ).id


def test_default_bound_comes_from_settings(registry: VoiceRegistry) -> None:
    assert Settings().voice_cache_size == 256
    service = _service(registry, StubFamily(), Settings(voice_cache_size=1))
    try:
        for voice_id in [_clone(registry, seed) for seed in range(2)]:
            assert service.voice(voice_id) is not None
        assert len(service._clones) == 1
    finally:
        service.close()


def test_clones_are_a_bounded_lru_rebuilt_from_the_registry(registry: VoiceRegistry) -> None:
    family = StubFamily()
    service = _service(registry, family, voice_cache_size=2)
    try:
        a, b, c = (_clone(registry, seed) for seed in range(3))
        for voice_id in (a, b, c):  # a is evicted by c
            assert service.voice(voice_id) is not None
        assert family.built == [a, b, c]
        assert service.voice(c) is not None  # still built: no new voice
        assert family.built == [a, b, c]
        again = service.voice(a)  # evicted: built again from the registry, nothing lost
        assert isinstance(again, Built) and again.info.id == a
        assert np.array_equal(again.embedding, _vec(0))
        assert family.built == [a, b, c, a]
        assert len(service._clones) == 2
        service.forget("deleted", a)
        registry.delete(a)
        assert service.voice(a) is None
    finally:
        service.close()


async def test_reference_voices_are_a_bounded_lru(registry: VoiceRegistry) -> None:
    embedded: list[bytes] = []

    async def embed(data: bytes) -> npt.NDArray[np.float32]:
        embedded.append(data)
        return _vec(len(data))

    family = StubFamily()
    service = _service(registry, family, voice_cache_size=2, embed_reference=embed)
    try:
        clips = [b"x" * n for n in (1, 2, 3)]
        first, *_ = [await service.reference_voice(clip) for clip in clips]
        assert service.voice(first.info.id) is None  # evicted
        assert (await service.reference_voice(clips[2])).info.id in family.built
        assert embedded == clips  # the newest stayed built
        again = await service.reference_voice(clips[0])
        assert again.info.id == first.info.id and embedded == [*clips, clips[0]]
    finally:
        service.close()


def test_opus_complexity_comes_from_settings(
    registry: VoiceRegistry, monkeypatch: pytest.MonkeyPatch
) -> None:
    from emostream.codec.packetizer import FormatError, OutputFormat
    from emostream.stream import service as service_module
    from emostream.stream.streamer import UtteranceRequest

    seen: list[OutputFormat] = []

    def fake_stream(request: UtteranceRequest, *args: Any, **kwargs: Any) -> Any:
        seen.append(request.fmt)
        return iter(())

    monkeypatch.setattr(service_module, "stream_utterance", fake_stream)
    settings = Settings(
        opus_complexity=1, opus_application="lowdelay", opus_bitrate=48000, phrase_cache_bytes=0
    )
    service = _service(registry, StubFamily(), settings)
    try:
        for fmt in (OutputFormat(bitrate=24000), OutputFormat()):
            request = UtteranceRequest(Built("x", _vec(0)), fmt=fmt)  # type: ignore[arg-type]
            service._output(request, None, None, False, "", None)  # type: ignore[arg-type]
        assert seen == [
            OutputFormat(bitrate=24000, complexity=1, application="lowdelay"),  # the client's
            OutputFormat(bitrate=48000, complexity=1, application="lowdelay"),  # the server's
        ]
    finally:
        service.close()
    with pytest.raises(FormatError, match="complexity 11"):
        _service(registry, StubFamily(), Settings(opus_complexity=11))
    with pytest.raises(FormatError, match="application 'voip'"):
        _service(registry, StubFamily(), Settings(opus_application="voip"))
    with pytest.raises(FormatError, match="bitrate 1000"):
        _service(registry, StubFamily(), Settings(opus_bitrate=1000))
