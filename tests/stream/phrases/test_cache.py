"""The phrase cache: keys, the recorded phrase, the byte-bounded store, the hold rule, replay
pacing, and whole utterances through SpeechService with a fast deterministic voice."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from emostream.codec.packetizer import OutputFormat
from emostream.config import Settings
from emostream.stream.metrics import Metrics
from emostream.stream.phrases.cache import PhraseCache
from emostream.stream.phrases.key import KeyChain, phrase_params
from emostream.stream.phrases.record import Phrase, PhraseRecorder, decode_phrase
from emostream.stream.phrases.replay import send_delay
from emostream.stream.phrases.utterance import cached_utterance, hold_decision
from emostream.stream.service import SpeechService
from emostream.stream.streamer import Event, Packet, UtteranceRequest, UtteranceStats
from emostream.voices.base import Controls, Latent, VoiceInfo
from emostream.voices.catalog import VoiceCatalog


class Tone:
    """A voice that is quick and deterministic: a sine per voice, frames per character."""

    hop_length = 160
    context_frames = 2

    def __init__(
        self, voice_id: str, freq: float, speaker: npt.NDArray[np.float32] | None = None
    ) -> None:
        self.info = VoiceInfo(voice_id, "tone", "en", 16000, ("speed", "speaker"), "")
        self.freq = freq
        self.calls = 0
        if speaker is not None:
            self.speaker = speaker

    def acoustic(self, text: str, controls: Controls) -> Latent:
        self.calls += 1
        frames = max(1, int(len(text) * 3 / controls.speed))
        return Latent(np.full((1, frames), self.freq, dtype=np.float32))

    def decode(self, frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        t = np.arange(frames.shape[1] * self.hop_length) / 16000.0
        return (0.3 * np.sin(2 * np.pi * float(frames[0, 0]) * t)).astype(np.float32)


def _params(voice: Any = None, **kw: Any) -> bytes:
    args: dict[str, Any] = {
        "model_version": "m1",
        "timestamps": False,
        "word_timestamps": False,
        "scope": "",
    }
    args.update(kw)
    controls = args.pop("controls", Controls())
    fmt = args.pop("fmt", OutputFormat())
    return phrase_params(voice or Tone("a", 440.0), controls, fmt, **args)


def _phrase(payload: int = 100, packets: int = 3) -> Phrase:
    rec = PhraseRecorder(max_bytes=1 << 30)
    rec.add(Event({"type": "segment", "index": 0, "text": "x", "start_ms": 0.0}))
    for i in range(packets):
        rec.add(Packet(bytes([i]) * payload, 320))
    phrase = rec.finish()
    assert phrase is not None
    return phrase


# -- keys ---------------------------------------------------------------------------------


def test_everything_that_changes_the_audio_changes_the_key() -> None:
    base = _params()
    rng = np.random.default_rng(0)
    emb = rng.standard_normal(256).astype(np.float32)
    variants = [
        _params(Tone("b", 440.0)),  # another voice id
        _params(Tone("a", 440.0, speaker=emb)),  # the same id with an embedding (a clone)
        _params(Tone("a", 440.0, speaker=emb + 1e-3)),  # ... with another embedding
        _params(controls=Controls(speed=1.25)),
        _params(controls=Controls(pitch_shift=2.0)),
        _params(controls=Controls(energy=1.5)),
        _params(controls=Controls(emotion="happy")),
        _params(controls=Controls(emotion="happy", intensity=0.5)),
        _params(fmt=OutputFormat(codec="pcm_s16le")),
        _params(fmt=OutputFormat(sample_rate=24000)),
        _params(fmt=OutputFormat(bitrate=64000)),
        _params(fmt=OutputFormat(application="lowdelay")),
        _params(model_version="m2"),
        _params(timestamps=True),
        _params(word_timestamps=True),
        _params(scope="key-b"),
    ]
    keys = {base, *variants}
    assert len(keys) == len(variants) + 1
    assert _params() == base  # and nothing else does


def test_key_chain_prefixes_and_whole_key() -> None:
    one, two = KeyChain(_params()), KeyChain(_params())
    for seg in ["Hello there,", "this is a test."]:
        one.add(seg)
    two.add("Hello there,")
    assert two.prefix == one.prefixes[0] and two.key() != one.key()
    two.add("this is a test.")
    assert two.key() == one.key() and two.prefixes == one.prefixes
    joined = KeyChain(_params())
    joined.add("Hello there, this is a test.")  # other segments: another phrase
    assert joined.key() != one.key()


# -- the phrase ---------------------------------------------------------------------------


def test_phrase_round_trip_and_fresh_items() -> None:
    rec = PhraseRecorder(max_bytes=1 << 20)
    items: list[Packet | Event] = [
        Event({"type": "segment", "index": 0, "text": "Hi,", "start_ms": 0.0}),
        Event({"type": "words", "index": 0, "words": [{"word": "Hi", "char_start": 0}]}),
        Packet(b"\x01\x02", 960),
        Packet(b"\x03", 960),
        Event({"type": "segment", "index": 1, "text": "你好。", "start_ms": 40.0}),
        Packet(b"\x04\x05\x06", 100),
    ]
    for item in items:
        rec.add(item)
    phrase = rec.finish()
    assert phrase is not None and phrase.segments == 2 and phrase.audio_samples == 2020
    out = list(phrase.items())
    assert out == items
    first = out[1]
    assert isinstance(first, Event)
    first.body["words"][0]["char_start"] = 99  # a transport moving offsets
    assert list(phrase.items()) == items  # the cached copy is untouched
    again = decode_phrase(phrase.encode())
    assert again is not None and list(again.items()) == items
    assert decode_phrase(b"nope") is None and decode_phrase(phrase.encode()[:-1]) is None


def test_recorder_gives_up_past_its_bound_and_on_no_audio() -> None:
    rec = PhraseRecorder(max_bytes=250)
    for _ in range(3):
        rec.add(Packet(b"x" * 100, 960))
    assert rec.overflowed and rec.finish() is None
    empty = PhraseRecorder(max_bytes=1000)
    empty.add(Event({"type": "segment"}))
    assert empty.finish() is None


# -- the store ----------------------------------------------------------------------------


async def test_eviction_by_byte_bound_keeps_the_recent_ones() -> None:
    metrics = Metrics()
    size = _phrase().nbytes
    cache = PhraseCache(max_bytes=3 * size + 10, max_entry_bytes=size, metrics=metrics)
    for i in range(5):
        cache.put(f"k{i}", _phrase(), [f"p{i}"])
        assert cache.nbytes <= 3 * size + 10
    assert len(cache) == 3 and cache.stats.evictions == 2
    assert "k0" not in cache and "k1" not in cache
    assert not await cache.has_prefix("p0") and await cache.has_prefix("p4")
    assert await cache.get("k2") is not None  # k2 is now the most recent
    cache.put("k5", _phrase(), ["p5"])
    assert "k2" in cache and "k3" not in cache
    assert not cache.put("big", _phrase(payload=1000), ["pb"])  # over max_entry_bytes
    assert cache.stats.too_large == 1 and "big" not in cache
    value = metrics.registry.get_sample_value
    assert value("emostream_phrase_cache_bytes") == cache.nbytes == 3 * size
    assert value("emostream_phrase_cache_entries") == 3
    assert value("emostream_phrase_cache_evictions_total") == 3
    assert value("emostream_phrase_cache_skipped_total", {"reason": "too_large"}) == 1
    assert value("emostream_phrase_cache_lookups_total", {"result": "memory"}) == 1


async def test_shared_prefixes_are_counted() -> None:
    size = _phrase().nbytes
    cache = PhraseCache(max_bytes=2 * size, max_entry_bytes=size)
    cache.put("k1", _phrase(), ["p", "p1"])
    cache.put("k2", _phrase(), ["p", "p2"])
    cache.put("k3", _phrase(), ["q"])  # evicts k1: "p" is still a prefix of k2
    assert await cache.has_prefix("p") and not await cache.has_prefix("p1")
    cache.put("k4", _phrase(), ["r"])  # evicts k2
    assert not await cache.has_prefix("p")


def test_hold_rule() -> None:
    assert hold_decision(ended=True, prefix_cached=False, hold_left_s=0) == "lookup"
    assert hold_decision(ended=False, prefix_cached=True, hold_left_s=0.01) == "wait"
    assert hold_decision(ended=False, prefix_cached=True, hold_left_s=0) == "live"
    assert hold_decision(ended=False, prefix_cached=False, hold_left_s=1) == "live"


def test_replay_pacing_rule() -> None:
    assert send_delay(5.0, first_sent_at=None, now=10.0, lead_s=1.0) == 0  # first packet
    assert send_delay(0.5, first_sent_at=10.0, now=10.0, lead_s=1.0) == 0  # within the lead
    assert send_delay(3.0, first_sent_at=10.0, now=10.5, lead_s=1.0) == pytest.approx(1.5)
    assert send_delay(30.0, first_sent_at=10.0, now=10.0, lead_s=None) == 0  # unpaced


# -- the hold, with a scripted live path ----------------------------------------------------


async def _segments(*items: tuple[float, str | None]) -> AsyncIterator[str]:
    """Segments, each after a delay; None ends the input after its delay."""
    for delay, text in items:
        await asyncio.sleep(delay)
        if text is None:
            return
        yield text


class Live:
    """A live path that says which segments it spoke (one packet each)."""

    def __init__(self) -> None:
        self.spoken: list[str] = []
        self.started_at: float | None = None

    async def __call__(self, texts: AsyncIterator[str]) -> AsyncIterator[Packet | Event]:
        async for text in texts:
            if self.started_at is None:
                self.started_at = time.monotonic()
            self.spoken.append(text)
            yield Event({"type": "segment", "text": text})
            yield Packet(text.encode(), 320)


async def _run(cache: PhraseCache, segments: AsyncIterator[str], live: Live) -> list[Any]:
    stats = UtteranceStats()
    out = cached_utterance(
        segments, live=live, cache=cache, params=b"p", stats=stats, sample_rate=16000,
        hold_s=0.2, lead_s=None, clock=time.monotonic,
    )  # fmt: skip
    return [item async for item in out] + [stats.cached]


async def test_unknown_first_segment_goes_live_at_once_and_is_stored() -> None:
    cache = PhraseCache()
    live = Live()
    t0 = time.monotonic()
    items = await _run(cache, _segments((0, "One,"), (0.3, "two."), (0, None)), live)
    assert live.started_at is not None and live.started_at - t0 < 0.1  # no hold on a miss
    assert live.spoken == ["One,", "two."] and items[-1] is False
    again = Live()
    items2 = await _run(cache, _segments((0, "One,"), (0, "two."), (0, None)), again)
    assert again.spoken == [] and items2[-1] is True and items2[:-1] == items[:-1]


async def test_a_cached_prefix_waits_for_the_end_within_the_hold() -> None:
    cache = PhraseCache()
    await _run(cache, _segments((0, "One,"), (0, "two."), (0, None)), Live())
    # The input continues differently: live with every segment, in order.
    live = Live()
    await _run(cache, _segments((0, "One,"), (0.01, "three."), (0, None)), live)
    assert live.spoken == ["One,", "three."]
    # The end comes after the hold: live, not a replay (and nothing lost).
    slow = Live()
    items = await _run(cache, _segments((0, "One,"), (0, "two."), (0.4, None)), slow)
    assert slow.spoken == ["One,", "two."] and items[-1] is False
    assert cache.stats.memory_hits == 0


async def test_cancelled_or_failed_streams_are_not_stored() -> None:
    cache = PhraseCache()
    stats = UtteranceStats()
    out = cached_utterance(
        _segments((0, "One,"), (0, "two."), (0, None)), live=Live(), cache=cache, params=b"p",
        stats=stats, sample_rate=16000, clock=time.monotonic,
    )  # fmt: skip
    await anext(out)
    await out.aclose()  # the consumer went away (cancel)

    async def failing(texts: AsyncIterator[str]) -> AsyncIterator[Packet | Event]:
        async for text in texts:
            yield Packet(text.encode(), 320)
            raise RuntimeError("model failed")

    with pytest.raises(RuntimeError):
        await _run(cache, _segments((0, "One,"), (0, "two."), (0, None)), failing)  # type: ignore[arg-type]
    assert len(cache) == 0 and cache.stats.incomplete == 2


# -- whole utterances through the service ----------------------------------------------------


def _service(*voices: Tone, **settings: Any) -> SpeechService:
    return SpeechService(Settings(**settings), VoiceCatalog(list(voices)))  # type: ignore[arg-type]


async def _speak(
    service: SpeechService, voice: Tone, texts: list[str], *, stop_after: int | None = None,
    cache: bool = True, **request: Any,
) -> tuple[list[Any], UtteranceStats]:  # fmt: skip
    async def segments() -> AsyncIterator[str]:
        for text in texts:
            yield text

    req = UtteranceRequest(voice=voice, stream_id=service.new_stream_id(), **request)  # type: ignore[arg-type]
    items: list[Any] = []
    async with service.utterance(req, segments(), transport="ws", cache=cache) as (out, stats):
        async for item in out:
            items.append(item.data if isinstance(item, Packet) else item.body)
            if stop_after is not None and len(items) >= stop_after:
                break
    return items, stats


async def test_service_hit_is_identical_and_skips_the_model() -> None:
    a = Tone("a", 440.0)
    service = _service(a)
    try:
        texts = ["Hello there,", "this is a test."]
        first, s1 = await _speak(service, a, texts)
        calls = a.calls
        second, s2 = await _speak(service, a, texts)
        assert second == first and a.calls == calls  # same bytes, events; no model call
        assert s2.cached and not s1.cached and s2.audio_samples == s1.audio_samples
        done = s2.as_done(48000, cancelled=False)
        assert done["cached"] is True and done["segments"] == 2 and done["rtf"] == 0
        assert "cached" not in s1.as_done(48000, cancelled=False)
        value = service.metrics.registry.get_sample_value
        assert value("emostream_phrase_cache_lookups_total", {"result": "memory"}) == 1
        assert value("emostream_phrase_cache_stores_total") == 1
        assert value("emostream_phrase_cache_bytes") == service.phrase_cache.nbytes > 0  # type: ignore[union-attr]
    finally:
        service.close()


async def test_service_misses_on_other_voice_controls_or_format() -> None:
    a, b = Tone("a", 440.0), Tone("b", 660.0)
    service = _service(a, b)
    try:
        texts = ["Hello there, this is a test."]
        await _speak(service, a, texts)
        for voice, request in [
            (b, {}),
            (a, {"controls": Controls(speed=1.5)}),
            (a, {"fmt": OutputFormat(codec="pcm_s16le")}),
            (a, {"fmt": OutputFormat(sample_rate=16000)}),
            (a, {"timestamps": True}),
        ]:
            _, stats = await _speak(service, voice, texts, **request)
            assert not stats.cached, request
        _, stats = await _speak(service, a, texts, cache=False)  # bypass
        assert not stats.cached
        _, stats = await _speak(service, a, ["Hello there, this is another test."])
        assert not stats.cached
        _, stats = await _speak(service, a, texts)
        assert stats.cached
        value = service.metrics.registry.get_sample_value
        assert value("emostream_phrase_cache_lookups_total", {"result": "bypass"}) == 1
        assert value("emostream_phrase_cache_lookups_total", {"result": "memory"}) == 1
    finally:
        service.close()


async def test_service_does_not_store_a_stream_cut_short() -> None:
    a = Tone("a", 440.0)
    service = _service(a)
    try:
        texts = ["Hello there,", "this is a test."]
        await _speak(service, a, texts, stop_after=3)  # the consumer stops early
        assert len(service.phrase_cache) == 0  # type: ignore[arg-type]
        value = service.metrics.registry.get_sample_value
        assert value("emostream_phrase_cache_skipped_total", {"reason": "incomplete"}) == 1
        _, stats = await _speak(service, a, texts)
        assert not stats.cached
    finally:
        service.close()


async def test_cache_off_and_per_scope() -> None:
    a = Tone("a", 440.0)
    off = _service(a, phrase_cache_bytes=0)
    assert off.phrase_cache is None
    off.close()
    service = _service(a)
    try:

        async def speak(scope: str) -> bool:
            async def segments() -> AsyncIterator[str]:
                yield "Hello there."

            req = UtteranceRequest(voice=a, stream_id="s")  # type: ignore[arg-type]
            async with service.utterance(
                req, segments(), transport="ws", cache=True, cache_scope=scope
            ) as (out, stats):
                async for _ in out:
                    pass
            return stats.cached

        assert [await speak("alice"), await speak("bob"), await speak("alice")] == [
            False, False, True,
        ]  # fmt: skip
    finally:
        service.close()


async def test_redis_shares_phrases_between_processes(redis_server: Any) -> None:
    url = redis_server.url
    one, two = PhraseCache(redis_url=url), PhraseCache(redis_url=url)
    try:
        chain = KeyChain(b"p")
        chain.add("Hello.")
        one.put(chain.key(), _phrase(), chain.prefixes)
        await asyncio.wait_for(asyncio.gather(*one._writes), 5)
        assert await two.has_prefix(chain.prefix)  # from Redis: not in two's memory
        got = await two.get(chain.key())
        assert got is not None and list(got.items()) == list(_phrase().items())
        assert two.stats.redis_hits == 1 and chain.key() in two
    finally:
        await one.close()
        await two.close()


async def test_service_does_not_store_an_utterance_cut_at_its_audio_cap() -> None:
    """A phrase cut at max_utterance_audio_s is not a phrase: replayed, it would say nothing
    of the cut."""
    a = Tone("a", 440.0)
    service = _service(a, max_utterance_audio_s=0.5)
    try:
        texts = ["Hello there,", "this is a test."]  # 0.36 s + 0.45 s of audio
        for _ in range(2):
            _, stats = await _speak(service, a, texts)
            assert stats.truncated and not stats.cached
            assert stats.audio_samples == 24000  # 0.5 s at 48 kHz
        assert len(service.phrase_cache) == 0  # type: ignore[arg-type]
        value = service.metrics.registry.get_sample_value
        assert value("emostream_phrase_cache_skipped_total", {"reason": "too_large"}) == 2
    finally:
        service.close()
