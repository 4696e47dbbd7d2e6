"""The body of ``POST /v1/audio/speech``, read (sans-I/O): JSON bytes in, a
:class:`SpeechBody` or a :class:`RequestError` out.

One endpoint, two dialects, told apart by ``model``:

* **OpenAI** (a ``model`` named, as OpenAI requires and its SDK always sends): read as OpenAI's
  speech API reads it. ``response_format`` defaults to ``mp3``; ``voice`` may be one of OpenAI's
  names (``alloy``, ``nova``, ...: :meth:`~emostream.config.Settings.voice_aliases`) or
  ``{"id": ...}``; an unknown voice or too long an input is a 400, as OpenAI answers.
* **EmoStream** (no ``model``): as before the OpenAI dialect was added: ``opus`` by default,
  ``404 unknown_voice`` and ``413 text_too_long``.

Both take every field of both: the six formats (``mp3``, ``opus``, ``aac``, ``flac``,
``wav``, ``pcm``), ``speed`` from 0.25 to 4.0 (OpenAI's range; the voices speak 0.5-2.0, so it is
clamped there), ``instructions`` (read as an emotion ``prompt``: it sets ``emotion`` and
``intensity`` when the body does not), ``stream_format`` (``audio`` or ``sse``), and
EmoStream's controls (``emotion``, ``intensity``, ``pitch_shift``, ``energy``, ``prompt``,
``sample_rate``, ``cache``), ``voices`` (a voice per language, as on the WebSocket), and
pronunciation control (``pronunciation``, ``pronunciation_dictionaries``: docs/protocol.md,
"Pronunciation"; the dictionaries are looked up by the route, which knows the caller).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from emostream.codec.encoders import RESPONSE_FORMATS, ResponseFormat, missing_extra
from emostream.text.emotion import EmotionGuess, parse_prompt
from emostream.transport import schema
from emostream.transport.messages import (
    ProtocolError,
    bool_field,
    load_message,
    number_field,
    parse_controls,
    pronunciation_fields,
    sample_rate_field,
    voices_field,
)
from emostream.voices.base import Controls
from emostream.voices.stock_voices import language_of

# From the schema (speech_request): OpenAI's speech models (openai's SpeechModel) and this
# server's own name, all speaking the same voices; the speeds taken (OpenAI's range) and the
# voices' own (the WebSocket's), which they are clamped to.
MODELS: tuple[str, ...] = schema.choices("speech_request", "model")
NATIVE_MODEL = "emostream"
SPEED_RANGE = schema.number_range("speech_request", "speed")
VOICE_SPEED = schema.number_range("controls", "speed")
MAX_INSTRUCTIONS_CHARS = schema.max_length("speech_request", "instructions")
STREAM_FORMATS: tuple[str, ...] = schema.choices("speech_request", "stream_format")
# Codes whose status OpenAI answers otherwise (400 where EmoStream says 404 and 413).
OPENAI_STATUS = {"unknown_voice": 400, "text_too_long": 400}


class RequestError(Exception):
    """A refused speech request: HTTP ``status``, EmoStream ``code``, ``message``, and the
    field at fault (``param``)."""

    def __init__(self, status: int, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.param = param

    def in_dialect(self, openai: bool) -> RequestError:
        """The same refusal with OpenAI's status when ``openai``."""
        if openai and self.code in OPENAI_STATUS:
            return RequestError(OPENAI_STATUS[self.code], self.code, self.message, self.param)
        return self


@dataclass(frozen=True)
class SpeechBody:
    """A speech request as read: ``voice_id`` after OpenAI's names are mapped (``voice_asked``:
    as the client wrote it)."""

    text: str
    voice_id: str
    voice_asked: str
    openai: bool  # the OpenAI dialect: a model was named
    fmt: ResponseFormat
    sample_rate: int
    controls: Controls
    cache: bool
    sse: bool
    instructions: EmotionGuess | None  # what instructions asked for, when given
    speed_asked: float  # before clamping to VOICE_SPEED
    emotion_from: str | None  # the field that set the emotion: emotion, prompt or instructions
    inline_pronunciation: bool = True  # ``pronunciation``: inline overrides read
    dictionaries: tuple[str, ...] = ()  # ``pronunciation_dictionaries``, in order
    voices: dict[str, str] = field(default_factory=dict)  # a voice id per language (mapped)
    voice_named: bool = True  # the body named its voice (else the server's default)


def read_speech(
    raw: bytes, *, default_voice: str, aliases: Mapping[str, str], max_chars: int,
    language_defaults: Mapping[str, str] | None = None,
) -> SpeechBody:  # fmt: skip
    """Read one body. ``aliases``: OpenAI voice names -> voice ids. A body with no ``voice``
    speaks with ``language_defaults``' voice for its input's language (``en``, ``zh``:
    :func:`~emostream.voices.stock_voices.language_of`), else ``default_voice``. Raises
    :class:`RequestError` (in the body's dialect where it is known)."""
    try:
        body = load_message(raw)
    except ProtocolError as exc:
        raise RequestError(400, exc.code, exc.message, exc.param) from None
    openai = _model(body) is not None
    try:
        return _read(body, openai, default_voice=default_voice, aliases=aliases,
                     max_chars=max_chars, language_defaults=language_defaults or {})  # fmt: skip
    except ProtocolError as exc:
        raise RequestError(400, exc.code, exc.message, exc.param) from None
    except RequestError as exc:
        raise exc.in_dialect(openai) from None


def _model(body: dict[str, Any]) -> str | None:
    model = body.get("model")
    if model is None:
        return None
    if not isinstance(model, str) or not model.strip():
        raise RequestError(400, "bad_value", "'model' must be a non-empty string", "model")
    if model not in MODELS:
        raise RequestError(
            404, "model_not_found",
            f"The model {model[:100]!r} does not exist; models here: {', '.join(MODELS)}",
            "model",
        )  # fmt: skip
    return model


def _read(
    body: dict[str, Any],
    openai: bool,
    *,
    default_voice: str,
    aliases: Mapping[str, str],
    max_chars: int,
    language_defaults: Mapping[str, str],
) -> SpeechBody:
    text = body.get("input")
    if not isinstance(text, str) or not text.strip():
        raise RequestError(400, "empty_text", "'input' must be a non-empty string", "input")
    if len(text) > max_chars:
        raise RequestError(413, "text_too_long", f"'input' is over {max_chars} characters",
                           "input")  # fmt: skip
    asked = _voice(body, language_defaults.get(language_of(text), default_voice))
    voices = {lang: aliases.get(v, v) for lang, v in voices_field(body).items()}
    fmt = _format(body, openai)
    rate = sample_rate_field(body, fmt.default_rate)
    sse = _stream_format(body)
    speed = number_field(body, "speed", 1.0, *SPEED_RANGE)
    guess = _instructions(body)
    clamped = min(max(speed, VOICE_SPEED[0]), VOICE_SPEED[1])
    inline, dictionaries = pronunciation_fields(body)
    return SpeechBody(
        text=text,
        voice_id=aliases.get(asked, asked),
        voice_asked=asked,
        openai=openai,
        fmt=fmt,
        sample_rate=rate,
        controls=parse_controls(body, speed=clamped, style=guess),
        cache=bool_field(body, "cache", True),
        sse=sse,
        instructions=guess,
        speed_asked=speed,
        emotion_from=next(
            (k for k in ("emotion", "prompt") if body.get(k) is not None),
            "instructions" if guess is not None else None,
        ),
        inline_pronunciation=inline,
        dictionaries=dictionaries,
        voices=voices,
        voice_named=body.get("voice") is not None,
    )


def _voice(body: dict[str, Any], default: str) -> str:
    """``voice``: a name or id, ``{"id": ...}`` (OpenAI's custom voice), or the default."""
    voice = body.get("voice")
    if voice is None:
        return default
    if isinstance(voice, dict):
        voice = voice.get("id")
    if not isinstance(voice, str) or not voice.strip():
        raise ProtocolError(
            "bad_value", "'voice' must be a non-empty string or an object with an 'id'", "voice"
        )
    return voice


def _format(body: dict[str, Any], openai: bool) -> ResponseFormat:
    name = body.get("response_format")
    if name is None:
        name = "mp3" if openai else "opus"
    fmt = RESPONSE_FORMATS.get(name) if isinstance(name, str) else None
    if fmt is None:
        shown = repr(name)[:60]
        names = ", ".join(repr(n) for n in RESPONSE_FORMATS)
        raise RequestError(400, "bad_format",
                           f"Invalid value: {shown}. 'response_format' must be one of {names}",
                           "response_format")  # fmt: skip
    extra = missing_extra(fmt)
    if extra is not None:
        raise RequestError(
            400, "format_unavailable",
            f"response_format {fmt.name!r} needs the [{extra}] extra, which this server does "
            f"not have (pip install 'emostream[{extra}]'); mp3, opus, flac, wav and pcm need "
            "nothing more",
            "response_format",
        )  # fmt: skip
    return fmt


def _stream_format(body: dict[str, Any]) -> bool:
    """Whether ``stream_format`` asks for server-sent events."""
    value = body.get("stream_format")
    if value is None:
        return False
    if value not in STREAM_FORMATS:
        raise ProtocolError(
            "bad_value", "'stream_format' must be 'audio' or 'sse'", "stream_format"
        )
    return bool(value == "sse")


def _instructions(body: dict[str, Any]) -> EmotionGuess | None:
    value = body.get("instructions")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_INSTRUCTIONS_CHARS:
        raise ProtocolError(
            "bad_value",
            f"'instructions' must be a non-empty string of at most {MAX_INSTRUCTIONS_CHARS} "
            "characters",
            "instructions",
        )
    return parse_prompt(value)
