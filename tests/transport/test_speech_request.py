"""The speech body as read (sans-I/O): the two dialects told apart by ``model``, OpenAI's voice
names, formats, speed, instructions and stream_format, and each refusal's status, code and
field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from emostream.codec import encoders
from emostream.config import OPENAI_VOICES, Settings, parse_voice_aliases
from emostream.transport.speech_request import RequestError, SpeechBody, read_speech

ALIASES = Settings().voice_aliases()


def read(body: dict[str, Any] | bytes, **kw: Any) -> SpeechBody:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    args: dict[str, Any] = {"default_voice": "af_heart", "aliases": ALIASES, "max_chars": 100}
    return read_speech(raw, **{**args, **kw})


def refusal(body: dict[str, Any] | bytes) -> RequestError:
    with pytest.raises(RequestError) as info:
        read(body)
    return info.value


def test_openai_dialect_defaults() -> None:
    body = read({"model": "tts-1", "input": "Hi.", "voice": "alloy"})
    assert body.openai and body.fmt.name == "mp3" and body.sample_rate == 24000
    assert (body.voice_id, body.voice_asked) == ("af_alloy", "alloy")
    assert body.controls.speed == 1.0 and not body.sse and body.instructions is None


def test_native_dialect_keeps_its_defaults() -> None:
    body = read({"input": "Hi."})
    assert not body.openai and body.fmt.name == "opus" and body.sample_rate == 48000
    assert body.voice_id == "af_heart"


def test_every_openai_voice_name_is_mapped_to_an_english_stock_voice() -> None:
    # openai's SpeechCreateParams.voice (3.63)
    names = ("alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage",
             "shimmer", "verse", "marin", "cedar")  # fmt: skip
    assert tuple(ALIASES) == names
    assert all(v[:3] in ("af_", "am_", "bf_", "bm_") for v in ALIASES.values())
    assert len(set(ALIASES.values())) == len(names)


def test_voice_aliases_are_overridden_one_by_one() -> None:
    settings = Settings(openai_voices="nova=joe, narrator=bm_daniel")
    aliases = settings.voice_aliases()
    assert aliases["nova"] == "joe" and aliases["narrator"] == "bm_daniel"
    assert aliases["alloy"] == parse_voice_aliases(OPENAI_VOICES)["alloy"]
    with pytest.raises(ValueError, match="name=voice_id"):
        Settings(openai_voices="nova")


def test_native_ids_and_openai_voice_objects() -> None:
    assert read({"model": "tts-1", "input": "Hi.", "voice": "am_michael"}).voice_id == "am_michael"
    assert read({"model": "tts-1", "input": "Hi.", "voice": {"id": "v_123"}}).voice_id == "v_123"


@pytest.mark.parametrize("name", ["mp3", "opus", "aac", "flac", "wav", "pcm"])
def test_every_format_in_both_dialects(name: str) -> None:
    for extra in ({}, {"model": "gpt-4o-mini-tts"}):
        body = read({"input": "Hi.", "response_format": name, **extra})
        assert body.fmt.name == name
        assert body.sample_rate == (48000 if name == "opus" else 24000)


def test_speed_takes_openais_range_clamped_to_the_voices() -> None:
    assert read({"input": "Hi.", "speed": 4.0}).controls.speed == 2.0
    assert read({"input": "Hi.", "speed": 0.25}).controls.speed == 0.5
    assert read({"input": "Hi.", "speed": 1.3}).controls.speed == 1.3
    body = read({"input": "Hi.", "speed": 3})
    assert body.speed_asked == 3.0 and body.controls.speed == 2.0
    assert refusal({"input": "Hi.", "speed": 4.5}).param == "speed"


def test_instructions_act_as_a_prompt() -> None:
    body = read({"input": "Hi.", "instructions": "Speak in a very sad, gloomy voice."})
    assert body.controls.emotion == "sad" and body.controls.intensity > 0
    assert body.instructions is not None and body.instructions.label == "sad"
    plain = read({"input": "Hi.", "instructions": "Read it like a pirate."})
    assert plain.controls.emotion == "neutral"  # nothing it knows: said in X-EmoStream-Emotion
    # explicit controls and a prompt win over them
    both = read({"input": "Hi.", "instructions": "sad", "emotion": "happy", "intensity": 0.3})
    assert (both.controls.emotion, both.controls.intensity) == ("happy", 0.3)
    assert read({"input": "Hi.", "instructions": "sad", "prompt": "angry"}).controls.emotion == (
        "angry"
    )


def test_stream_format() -> None:
    assert read({"input": "Hi.", "stream_format": "sse"}).sse
    assert not read({"input": "Hi.", "stream_format": "audio"}).sse
    error = refusal({"input": "Hi.", "stream_format": "chunks"})
    assert (error.status, error.code, error.param) == (400, "bad_value", "stream_format")


@pytest.mark.parametrize(
    "body,status,code,param",
    [
        ({"model": "tts-1", "input": "Hi.", "response_format": "ogg"}, 400, "bad_format",
         "response_format"),
        ({"input": "Hi.", "response_format": 3}, 400, "bad_format", "response_format"),
        ({"model": "tts-2", "input": "Hi."}, 404, "model_not_found", "model"),
        ({"model": "", "input": "Hi."}, 400, "bad_value", "model"),
        ({"model": "tts-1"}, 400, "empty_text", "input"),
        ({"model": "tts-1", "input": "x" * 101}, 400, "text_too_long", "input"),
        ({"input": "x" * 101}, 413, "text_too_long", "input"),  # EmoStream's status
        ({"model": "tts-1", "input": "Hi.", "voice": {"name": "x"}}, 400, "bad_value", "voice"),
        ({"model": "tts-1", "input": "Hi.", "voice": 7}, 400, "bad_value", "voice"),
        ({"model": "tts-1", "input": "Hi.", "instructions": ""}, 400, "bad_value",
         "instructions"),
        ({"model": "tts-1", "input": "Hi.", "instructions": "x" * 4097}, 400, "bad_value",
         "instructions"),
        ({"model": "tts-1", "input": "Hi.", "speed": "fast"}, 400, "bad_value", "speed"),
        ({"model": "tts-1", "input": "Hi.", "sample_rate": 44100}, 400, "bad_format",
         "sample_rate"),
        ({"model": "tts-1", "input": "Hi.", "emotion": "bored"}, 400, "bad_value", "emotion"),
        (b"{nope", 400, "bad_json", None),
    ],
)  # fmt: skip
def test_refusals(body: dict[str, Any] | bytes, status: int, code: str, param: str) -> None:
    error = refusal(body)
    assert (error.status, error.code, error.param) == (status, code, param), error.message


def test_a_bad_format_names_the_six() -> None:
    message = refusal({"model": "tts-1", "input": "Hi.", "response_format": "ogg"}).message
    assert all(repr(n) in message for n in ("mp3", "opus", "aac", "flac", "wav", "pcm"))


def test_aac_without_pyav_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encoders, "_installed", lambda module: module != "av")
    error = refusal({"model": "tts-1", "input": "Hi.", "response_format": "aac"})
    assert (error.status, error.code, error.param) == (400, "format_unavailable",
                                                       "response_format")  # fmt: skip
    assert "emostream[media]" in error.message
    assert read({"model": "tts-1", "input": "Hi."}).fmt.name == "mp3"  # the default needs none


def test_the_field_that_set_the_emotion_is_named() -> None:
    """What an unsupported-emotion refusal names as its ``param``."""
    assert read({"input": "Hi."}).emotion_from is None
    assert read({"input": "Hi.", "instructions": "sadly"}).emotion_from == "instructions"
    assert read({"input": "Hi.", "instructions": "sadly", "prompt": "angry"}).emotion_from == (
        "prompt"
    )
    assert read({"input": "Hi.", "prompt": "x", "emotion": "sad"}).emotion_from == "emotion"
