"""Client messages, as the server reads them: JSON limits and the field validators that the
WebSocket (:mod:`emostream.transport.websocket.protocol`) and ``POST /v1/audio/speech``
(:mod:`emostream.transport.http`) share.

Field validation is strict: :func:`load_message` (JSON limits), :func:`voice_field`,
:func:`voices_field`, :func:`parse_controls`, :func:`sample_rate_field`, :func:`parse_format`. ``null`` is the same as
leaving a field out; any other value must have the field's JSON type (no ``"false"`` for a
boolean, no ``""`` for a voice) and numbers must be finite and in range. Ranges, defaults, enums
and lengths come from the protocol's JSON Schema (:mod:`emostream.transport.schema`);
``tests/transport/test_schema.py`` holds the two to the same verdict on every message.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

from emostream.codec.packetizer import SAMPLE_RATES, FormatError, OutputFormat
from emostream.text.emotion import EmotionGuess, parse_prompt
from emostream.text.pron.lexicon import PronunciationDictionary, merged
from emostream.text.pron.reader import PronunciationSetup
from emostream.transport import schema
from emostream.voices.base import Controls

# From the schema (protocol.schema.json), the one definition of the protocol's fields.
EMOTIONS: tuple[str, ...] = schema.choices("controls", "emotion")
MAX_PROMPT_CHARS = schema.max_length("controls", "prompt")
CODECS: tuple[str, ...] = schema.choices("format", "codec")
PRONUNCIATION_MODES: tuple[str, ...] = schema.choices("start_fields", "pronunciation")
_DICTIONARIES = schema.fields("start_fields")["pronunciation_dictionaries"]
MAX_DICTIONARIES = int(_DICTIONARIES["maxItems"])
MAX_DICTIONARY_ID_CHARS = int(_DICTIONARIES["items"]["maxLength"])
# The languages ``voices`` takes (a voice per language), as emostream.text.languages names them.
VOICE_LANGUAGES: tuple[str, ...] = tuple(
    schema.fields("start_fields")["voices"]["anyOf"][0]["propertyNames"]["enum"]
)
# name -> (default, lowest, highest)
_CONTROL_RANGES = {
    name: (float(schema.default("controls", name)), *schema.number_range("controls", name))
    for name in ("speed", "pitch_shift", "energy", "intensity")
}


class ProtocolError(Exception):
    """A refused message: ``code`` and ``message``; ``param``: the field at fault, when one is
    (the OpenAI-shaped HTTP error names it)."""

    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.param = param


MAX_DEPTH: int = schema.envelope()["max_depth"]  # nesting of arrays/objects; v1 needs 2
_SURROGATE = re.compile("[\ud800-\udfff]")


def _parse_int(digits: str) -> int | float:
    """JSON integers: long ones become floats (``inf`` when huge), which range checks refuse,
    instead of unbounded ints (Python refuses to parse those past 4300 digits)."""
    return int(digits) if len(digits) <= 18 else float(digits)


def load_message(raw: str | bytes) -> dict[str, Any]:
    """Parse one client message (a WebSocket text frame or an HTTP body) into a JSON object.

    Raises :class:`ProtocolError`: ``bad_json`` (not JSON, not UTF-8), ``bad_message`` (not an
    object, nested deeper than :data:`MAX_DEPTH`, a key that is not valid Unicode) or
    ``bad_value`` (a string value with a lone surrogate such as ``"\\ud800"``, which cannot
    be encoded as UTF-8), naming the field."""
    try:
        msg = json.loads(raw, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise ProtocolError(
            "bad_json", f"malformed JSON: {exc.msg} at position {exc.pos}"
        ) from None
    except RecursionError:
        raise ProtocolError("bad_message", f"JSON nested more than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # UnicodeDecodeError for an HTTP body that is not UTF-8
        raise ProtocolError("bad_json", f"malformed JSON: {str(exc)[:120]}") from None
    if not isinstance(msg, dict):
        # json.loads refuses deep nesting only past the interpreter's recursion limit, which
        # imported libraries raise (torch's compiler does): say "nested" either way.
        if _deeper_than(msg, MAX_DEPTH):
            raise ProtocolError("bad_message", f"JSON nested more than {MAX_DEPTH} levels")
        raise ProtocolError("bad_message", "a message must be a JSON object")
    _check_tree(msg)
    return msg


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether arrays/objects nest more than ``limit`` levels in ``value``."""
    return any(isinstance(v, (dict, list)) and depth > limit for _, v, depth in _nodes(value))


def frame_too_large(
    size: int, msg: dict[str, Any], *, max_message_bytes: int, max_start_bytes: int
) -> ProtocolError | None:
    """Why a text frame of ``size`` bytes is refused (``too_large``), or None.

    Messages are held to ``max_message_bytes``; only a ``start`` carrying ``reference_audio``
    (an inline clip, base64) may be up to ``max_start_bytes``."""
    inline_clip = msg.get("type") == "start" and "reference_audio" in msg
    limit = max(max_message_bytes, max_start_bytes) if inline_clip else max_message_bytes
    if size <= limit:
        return None
    what = "a start with reference_audio" if inline_clip else "a message"
    hint = "" if inline_clip else f" (only a start with reference_audio may be {max_start_bytes})"
    return ProtocolError("too_large", f"{what} is {size} bytes; at most {limit}{hint}")


def _nodes(value: Any) -> Iterator[tuple[str, Any, int]]:
    """Every value in a parsed message with its field path and nesting depth (1 = the
    message itself), iteratively (no recursion limit to meet), parents before children."""
    stack: list[tuple[str, Any, int]] = [("", value, 1)]
    while stack:
        path, item, depth = stack.pop()
        yield path, item, depth
        if isinstance(item, dict):
            stack.extend(
                (f"{path}.{key}" if path else key, x, depth + 1) for key, x in item.items()
            )
        elif isinstance(item, list):
            stack.extend((path, x, depth + 1) for x in item)


def _check_tree(msg: dict[str, Any]) -> None:
    """Nesting depth and valid Unicode everywhere in a parsed message."""
    for path, value, depth in _nodes(msg):
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise ProtocolError(
                    "bad_value", f"{path!r} is not valid Unicode (it holds a lone surrogate)"
                )
        elif isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise ProtocolError("bad_message", f"JSON nested more than {MAX_DEPTH} levels")
            if isinstance(value, dict) and any(_SURROGATE.search(key) for key in value):
                raise ProtocolError(
                    "bad_message", "a key is not valid Unicode (it holds a lone surrogate)"
                )


def number_field(msg: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = msg.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError("bad_value", f"{key!r} must be a number", key)
    if not (isinstance(value, int) or math.isfinite(value)) or not lo <= value <= hi:
        raise ProtocolError("bad_value", f"{key!r} must be a finite number from {lo} to {hi}", key)
    return float(value)


def integer_field(raw: dict[str, Any], key: str, default: int, *, code: str, name: str) -> int:
    """An optional whole-number field (``48000`` or ``48000.0``, not ``"48000"`` or ``true``)."""
    value = raw.get(key)
    if value is None:
        return default
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer()))
    ):
        raise ProtocolError(code, f"{name!r} must be a whole number", key)
    return int(value)


def bool_field(msg: dict[str, Any], key: str, default: bool = False) -> bool:
    value = msg.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ProtocolError("bad_value", f"{key!r} must be true or false (a JSON boolean)", key)
    return value


def voice_field(msg: dict[str, Any], default: str) -> str:
    """The ``voice`` id: the server default when absent or ``null``, else a non-empty string."""
    voice = msg.get("voice")
    if voice is None:
        return default
    if not isinstance(voice, str) or not voice.strip():
        raise ProtocolError("bad_value", "'voice' must be a non-empty string", "voice")
    return voice


def voices_field(msg: dict[str, Any]) -> dict[str, str]:
    """``voices``, a voice id per language (``{"en": "af_heart", "zh": "zf_xiaoxiao"}``): ``{}``
    when absent, ``null`` or empty; a ``null`` id leaves its language out. Its shape only: the
    voices are looked up (and checked against their language) by the caller."""
    value = msg.get("voices")
    if value is None:
        return {}
    example = '{"en": "af_heart", "zh": "zf_xiaoxiao"}'
    if not isinstance(value, dict):
        raise ProtocolError(
            "bad_value", f"'voices' must be an object of language to voice id, e.g. {example}",
            "voices",
        )  # fmt: skip
    out: dict[str, str] = {}
    for language, voice in value.items():
        if language not in VOICE_LANGUAGES:
            raise ProtocolError(
                "bad_value", f"'voices' names language {language[:40]!r}; the languages are "
                f"{', '.join(VOICE_LANGUAGES)}", "voices",
            )  # fmt: skip
        if voice is None:
            continue
        if not isinstance(voice, str) or not voice.strip():
            raise ProtocolError(
                "bad_value", f"'voices.{language}' must be a non-empty voice id", "voices"
            )
        out[language] = voice
    return out


def sample_rate_field(raw: dict[str, Any], default: int, *, name: str = "sample_rate") -> int:
    """``sample_rate`` (``format.sample_rate`` on the WebSocket): one of the served rates."""
    rate = integer_field(raw, "sample_rate", default, code="bad_format", name=name)
    if rate not in SAMPLE_RATES:
        raise ProtocolError(
            "bad_format", f"{name!r} must be one of {list(SAMPLE_RATES)}", "sample_rate"
        )
    return rate


def parse_controls(
    msg: dict[str, Any], *, speed: float | None = None, style: EmotionGuess | None = None
) -> Controls:
    """Controls from a ``start`` message (or an HTTP body); type- and range-checked.

    A free-text ``prompt`` ("用愤怒的语气", "a bit sad") sets ``emotion`` and ``intensity``
    when they are not given explicitly. The HTTP body passes its own reading of ``speed``
    (OpenAI's wider range, clamped) and of ``instructions`` (``style``: what a ``prompt`` would
    set, when the body has none).
    """
    emotion = msg.get("emotion")
    if emotion is not None and (not isinstance(emotion, str) or emotion not in EMOTIONS):
        raise ProtocolError("bad_value", f"'emotion' must be one of {list(EMOTIONS)}", "emotion")
    prompt = msg.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str) or not prompt.strip() or len(prompt) > MAX_PROMPT_CHARS:
            raise ProtocolError(
                "bad_value",
                f"'prompt' must be a non-empty string of at most {MAX_PROMPT_CHARS} characters",
                "prompt",
            )
        style = parse_prompt(prompt) if emotion is None else None
    guessed = None
    if emotion is None and style is not None:
        emotion = style.label
        if msg.get("intensity") is None:
            guessed = style.intensity
    return Controls(
        speed=number_field(msg, "speed", *_CONTROL_RANGES["speed"]) if speed is None else speed,
        pitch_shift=number_field(msg, "pitch_shift", *_CONTROL_RANGES["pitch_shift"]),
        energy=number_field(msg, "energy", *_CONTROL_RANGES["energy"]),
        emotion=emotion or "neutral",
        intensity=number_field(msg, "intensity", *_CONTROL_RANGES["intensity"])
        if guessed is None
        else guessed,
    )


def parse_format(raw: Any) -> OutputFormat:
    if raw is None:
        return OutputFormat()
    if not isinstance(raw, dict):
        raise ProtocolError("bad_format", "'format' must be an object")
    codec = raw.get("codec")
    if codec is not None and codec not in CODECS:
        raise ProtocolError(
            "bad_format", f"'format.codec' must be {' or '.join(repr(c) for c in CODECS)}"
        )
    try:
        return OutputFormat(
            codec=codec or "opus",
            sample_rate=sample_rate_field(raw, 48000, name="format.sample_rate"),
            bitrate=None  # the server's default (settings.opus_bitrate)
            if raw.get("bitrate") is None
            else integer_field(raw, "bitrate", 0, code="bad_format", name="format.bitrate"),
        )
    except FormatError as exc:
        raise ProtocolError("bad_format", str(exc)) from exc


def pronunciation_fields(msg: dict[str, Any]) -> tuple[bool, tuple[str, ...]]:
    """``pronunciation`` (``inline``, the default: ``{word|...}`` overrides are read; ``off``:
    braces are text) and the ``pronunciation_dictionaries`` ids of a start, a line or a speech
    body, checked: (inline, ids in order, each once)."""
    mode = msg.get("pronunciation")
    if mode is not None and mode not in PRONUNCIATION_MODES:
        raise ProtocolError("bad_value", "'pronunciation' must be "
                            f"{' or '.join(map(repr, PRONUNCIATION_MODES))}",
                            "pronunciation")  # fmt: skip
    ids = msg.get("pronunciation_dictionaries")
    if ids is None:
        ids = []
    if (
        not isinstance(ids, list)
        or len(ids) > MAX_DICTIONARIES
        or not all(isinstance(i, str) and 0 < len(i) <= MAX_DICTIONARY_ID_CHARS for i in ids)
    ):
        raise ProtocolError(
            "bad_value", f"'pronunciation_dictionaries' must be a list of at most "
            f"{MAX_DICTIONARIES} dictionary ids (strings of 1-{MAX_DICTIONARY_ID_CHARS} "
            "characters)", "pronunciation_dictionaries",
        )  # fmt: skip
    return mode != "off", tuple(dict.fromkeys(ids))


def resolve_pronunciation(
    inline: bool, ids: tuple[str, ...], lookup: Callable[[str], PronunciationDictionary | None]
) -> PronunciationSetup:
    """The setup of :func:`pronunciation_fields`' answer: each dictionary found by ``lookup``
    among the caller's (None: ``unknown_dictionary``)."""
    found: list[PronunciationDictionary] = []
    for dictionary_id in ids:
        dictionary = lookup(dictionary_id)
        if dictionary is None:
            raise ProtocolError(
                "unknown_dictionary", f"no pronunciation dictionary {dictionary_id[:80]!r}; "
                "GET /v1/pronunciation-dictionaries lists yours", "pronunciation_dictionaries",
            )  # fmt: skip
        found.append(dictionary)
    return PronunciationSetup(inline=inline, lexicon=merged(found) if found else None)


def pronunciation_setup(
    msg: dict[str, Any], lookup: Callable[[str], PronunciationDictionary | None]
) -> PronunciationSetup:
    """:func:`pronunciation_fields` and :func:`resolve_pronunciation` of one message."""
    return resolve_pronunciation(*pronunciation_fields(msg), lookup)
