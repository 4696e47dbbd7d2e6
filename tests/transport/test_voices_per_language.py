"""``voices`` (a voice per language) on the WebSocket and ``POST /v1/audio/speech``: the
protocol's checks and precedence (sans-I/O), then the real server with the EmoStream voices."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import httpx
import numpy as np
import pytest
import websockets

from emostream.text.context import Segment
from emostream.text.languages import segment_language
from emostream.transport.websocket.protocol import (
    BeginUtterance,
    EnqueueLine,
    QueueSegments,
    SendError,
    SessionProtocol,
)
from emostream.voices.base import ALL_CONTROLS, VoiceInfo
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect


def info(voice_id: str, language: str, *, rate: int = 22050, words: bool = True,
         controls: tuple[str, ...] = ALL_CONTROLS) -> VoiceInfo:  # fmt: skip
    return VoiceInfo(voice_id, "m", language, rate, controls, word_timestamps=words)


VOICES = {v.id: v for v in (
    info("af_heart", "en-US"), info("am_michael", "en-US"), info("zf_xiaoxiao", "zh-CN"),
    info("vc_clone", "multi"), info("joe", "en-US", controls=("speed",)),
    info("zh_slow", "zh-CN", rate=16000), info("zh_mute", "zh-CN", words=False),
)}  # fmt: skip


def proto() -> SessionProtocol:
    return SessionProtocol(lookup_voice=VOICES.get, default_voice="af_heart")


def send(p: SessionProtocol, **msg: Any) -> list[object]:
    return list(p.receive_text(json.dumps(msg)))


def segments(p: SessionProtocol, text: str) -> list[str]:
    """The segments queued for ``text`` sent whole, then flushed."""
    actions = send(p, type="text", text=text) + send(p, type="flush")
    return [s for a in actions if isinstance(a, QueueSegments) for s in a.texts]


def begin(**msg: Any) -> tuple[SessionProtocol, BeginUtterance]:
    p = proto()
    (action,) = send(p, type="start", **msg)
    assert isinstance(action, BeginUtterance), action
    return p, action


def refused(**msg: Any) -> SendError:
    (action,) = send(proto(), type="start", **msg)
    assert isinstance(action, SendError), action
    return action


# ------------------------------------------------------------------ protocol (sans I/O)
def test_started_names_the_voice_of_each_language_and_the_text_is_cut() -> None:
    p, start = begin(voices={"en": "am_michael", "zh": "zf_xiaoxiao"})
    ev = start.started_event
    assert ev["voices"] == {"en": "am_michael", "zh": "zf_xiaoxiao"}
    assert ev["voice"] == "am_michael"  # the voice given first stands for the utterance
    assert start.request.cut_languages
    queued = segments(p, "Hello everyone 大家好!")
    assert [Segment.parse(s).text for s in queued] == ["Hello everyone", "大家好!"]
    assert [segment_language(s) for s in queued] == ["en", "zh"]


def test_without_voices_nothing_changes() -> None:
    p, start = begin()
    assert "voices" not in start.started_event and not start.request.cut_languages
    assert segments(p, "Hello everyone 大家好!") == ["Hello everyone 大家好!"]


def test_one_voice_for_both_languages_does_not_cut() -> None:
    p, start = begin(voices={"en": "vc_clone"})  # a clone speaks both
    assert start.started_event["voices"] == {"en": "vc_clone", "zh": "vc_clone"}
    assert not start.request.cut_languages
    assert segments(p, "Hello everyone 大家好!") == ["Hello everyone 大家好!"]


def test_precedence_voices_then_voice_then_a_voice_that_speaks_it() -> None:
    _, start = begin(voice="am_michael", voices={"zh": "zf_xiaoxiao"})
    assert start.started_event["voices"] == {"en": "am_michael", "zh": "zf_xiaoxiao"}
    assert start.started_event["voice"] == "am_michael"
    _, start = begin(voice="vc_clone", voices={"en": "af_heart"})
    assert start.started_event["voices"] == {"en": "af_heart", "zh": "vc_clone"}
    # nothing speaks zh here and no timbre match is known: the voice, as without voices
    _, start = begin(voices={"en": "af_heart"})
    assert start.started_event["voices"] == {"en": "af_heart", "zh": "af_heart"}


@pytest.mark.parametrize(
    ("voices", "code", "says"),
    [
        ("af_heart", "bad_value", "'voices' must be an object"),
        ({"fr": "af_heart"}, "bad_value", "'fr'; the languages are en, zh"),
        ({"en-US": "af_heart"}, "bad_value", "the languages are en, zh"),
        ({"zh": ""}, "bad_value", "'voices.zh' must be a non-empty voice id"),
        ({"zh": 5}, "bad_value", "'voices.zh'"),
        ({"zh": "nobody"}, "unknown_voice", "voices.zh: unknown voice 'nobody'"),
        ({"zh": "af_heart"}, "unsupported_language", "'af_heart' does not speak 'zh'"),
        ({"en": "zf_xiaoxiao"}, "unsupported_language", "does not speak 'en'"),
        ({"en": "af_heart", "zh": "zh_slow"}, "bad_value", "share a sample rate"),
    ],
)  # fmt: skip
def test_bad_voices_are_refused_clearly(voices: Any, code: str, says: str) -> None:
    error = refused(voices=voices)
    assert (error.code, says in error.message) == (code, True), error.message


def test_every_voice_must_take_the_controls_asked() -> None:
    error = refused(voices={"en": "joe", "zh": "zf_xiaoxiao"}, emotion="happy")
    assert error.code == "unsupported_control" and "'joe'" in error.message
    _, start = begin(voices={"en": "joe", "zh": "zf_xiaoxiao"}, speed=1.2)
    assert start.started_event["controls"] == {c: c == "speed" for c in ALL_CONTROLS}


def test_word_timestamps_only_when_every_voice_gives_them() -> None:
    _, start = begin(voices={"en": "af_heart", "zh": "zh_mute"}, word_timestamps=True)
    assert start.started_event["word_timestamps"] is False
    assert not start.request.word_timestamps


def test_a_line_takes_voices_checked_when_queued_and_spoken_with_them() -> None:
    p = proto()
    (bad,) = send(p, type="line", text="你好", voices={"zh": "af_heart"})
    assert isinstance(bad, SendError) and bad.code == "unsupported_language"
    (line,) = send(p, type="line", text="Hi, 你好！", id="m1",
                   voices={"en": "af_heart", "zh": "zf_xiaoxiao"})  # fmt: skip
    assert isinstance(line, EnqueueLine)
    started, queued, *_ = p.start_line(line.id, line.text, line.fields)
    assert isinstance(started, BeginUtterance) and isinstance(queued, QueueSegments)
    assert started.started_event["voices"] == {"en": "af_heart", "zh": "zf_xiaoxiao"}
    assert [segment_language(s) for s in queued.texts] == ["en", "zh"]


# ------------------------------------------------------------------ the server (slow)
STOCK = ("af_heart", "am_michael", "zf_xiaoxiao", "zm_yunxi", "zh_cross002", "zh_cross010")
MIXED = "Hello everyone, 大家好！I just got home from work, 今天真的好累啊。这个 bug 太离谱了。"


@pytest.fixture(scope="module")
def fs2_server(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog, load_acoustic_family

    settings = Settings(data_dir=str(tmp_path_factory.mktemp("langvoices")), acoustic="on")
    family = load_acoustic_family(settings)
    assert family is not None
    catalog = VoiceCatalog([joe, *(v for v in family.stock_voices() if v.info.id in STOCK)])
    catalog.family = family
    with ServerThread(create_app(settings, catalog=catalog)) as srv:
        yield srv


async def utterance(url: str, text: str, **start: Any) -> tuple[list[dict[str, Any]], bytes]:
    async with websockets.connect(url, max_size=None) as ws:
        await ws.send(json.dumps({"type": "start", "format": {"codec": "pcm_s16le",
                                  "sample_rate": 24000}, **start}))  # fmt: skip
        await ws.send(json.dumps({"type": "text", "text": text}))
        await ws.send(json.dumps({"type": "end"}))
        events, frames = await collect(ws)
    return events, b"".join(frames)


@pytest.mark.slow
async def test_a_mixed_line_is_spoken_by_both_voices(fs2_server: ServerThread) -> None:
    voices = {"en": "af_heart", "zh": "zf_xiaoxiao"}
    events, audio = await utterance(fs2_server.ws_url, MIXED, voices=voices, cache=False)
    assert events[0]["voices"] == voices
    segments = [e for e in events if e["type"] == "segment"]
    assert [(e["language"], e["voice"]) for e in segments] == [
        ("en", "af_heart"), ("zh", "zf_xiaoxiao"), ("en", "af_heart"), ("zh", "zf_xiaoxiao"),
        ("zh", "zf_xiaoxiao")]  # fmt: skip
    assert all(segment_language(e["text"]) == e["language"] for e in segments)
    assert events[-1]["type"] == "done" and events[-1]["segments"] == 5
    starts = [round(e["start_ms"] * 24) * 2 for e in segments] + [len(audio)]
    for a, b in pairwise(starts):  # every segment has its own sound
        pcm = np.frombuffer(audio[a:b], dtype="<i2")
        assert len(pcm) > 24000 * 0.3 and np.abs(pcm).max() > 1000
    # The same text with the other Mandarin voice differs only in the Mandarin segments.
    events2, audio2 = await utterance(fs2_server.ws_url, MIXED, cache=False,
                                      voices={"en": "af_heart", "zh": "zm_yunxi"})  # fmt: skip
    seg2 = [e for e in events2 if e["type"] == "segment"]
    assert audio2[: starts[1]] == audio[: starts[1]]  # the first (English) segment is the same
    assert seg2[1]["voice"] == "zm_yunxi"


@pytest.mark.slow
async def test_a_language_left_out_gets_the_nearest_timbre(fs2_server: ServerThread) -> None:
    events, _ = await utterance(fs2_server.ws_url, "I love 火锅 so much.",
                                voices={"en": "af_heart"})  # fmt: skip
    zh = events[0]["voices"]["zh"]
    assert zh in STOCK and zh.startswith("z")
    assert [e["voice"] for e in events if e["type"] == "segment"] == ["af_heart", zh, "af_heart"]


@pytest.mark.slow
async def test_the_phrase_cache_keeps_voices_apart(fs2_server: ServerThread) -> None:
    text = "Hi there! 你好，朋友。"
    _, audio = await utterance(fs2_server.ws_url, text, voices={"zh": "zf_xiaoxiao"})
    again, audio_again = await utterance(fs2_server.ws_url, text, voices={"zh": "zf_xiaoxiao"})
    assert again[-1].get("cached") is True and audio_again == audio
    other, _ = await utterance(fs2_server.ws_url, text, voices={"zh": "zm_yunxi"})
    assert "cached" not in other[-1]
    assert [e.get("voice") for e in other if e["type"] == "segment"][1] == "zm_yunxi"


@pytest.mark.slow
def test_the_speech_endpoint_takes_voices(fs2_server: ServerThread) -> None:
    body = {"input": "Hello, 你好！", "response_format": "pcm", "cache": False}
    both = httpx.post(
        f"{fs2_server.url}/v1/audio/speech",
        timeout=60,
        json={**body, "voices": {"en": "af_heart", "zh": "zf_xiaoxiao"}},
    )
    assert both.status_code == 200, both.text
    assert both.headers["X-EmoStream-Voices"] == "en=af_heart,zh=zf_xiaoxiao"
    alone = httpx.post(f"{fs2_server.url}/v1/audio/speech", timeout=60,
                       json={**body, "voice": "af_heart"})  # fmt: skip
    assert alone.status_code == 200 and "X-EmoStream-Voices" not in alone.headers
    assert both.content != alone.content
    bad = httpx.post(f"{fs2_server.url}/v1/audio/speech", timeout=60,
                     json={**body, "voices": {"zh": "af_heart"}})  # fmt: skip
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "unsupported_language"
    assert bad.json()["error"]["param"] == "voices"
