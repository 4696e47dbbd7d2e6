"""WebSocket protocol v1 for ``/v1/stream`` as a sans-I/O state machine.

Feed it what the client sent (``receive_text`` / ``receive_bytes``); it returns
actions for the I/O layer to carry out. It never touches a socket, a task or a model.

States: ``idle`` (waiting for ``start``) → ``open`` (taking ``text``/``flush``) →
``ending`` (``end`` received, audio still flowing) → ``idle`` once the I/O layer
reports the utterance finished. ``cancel`` returns to ``idle`` at once.
Every bad message yields an :class:`SendError` action and leaves the state as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from emostream.codec.packetizer import FRAME_MS, FormatError, OutputFormat
from emostream.text.emotion import parse_prompt
from emostream.text.normalize import normalize
from emostream.text.splitter import Segmenter
from emostream.voices.base import EMOTIONS, Controls, UnsupportedControl, VoiceInfo, check_controls

State = Literal["idle", "open", "ending"]


@dataclass(frozen=True)
class StartRequest:
    voice: VoiceInfo
    controls: Controls
    fmt: OutputFormat
    timestamps: bool
    stream_id: str


@dataclass(frozen=True)
class BeginUtterance:
    request: StartRequest
    started_event: dict[str, Any]


@dataclass(frozen=True)
class QueueSegments:
    texts: list[str]


@dataclass(frozen=True)
class EndOfInput:
    """No more text: the utterance finishes once queued segments are spoken."""


@dataclass(frozen=True)
class CancelUtterance:
    """Stop audio now and report ``done`` with ``cancelled: true``."""


@dataclass(frozen=True)
class SendError:
    code: str
    message: str

    @property
    def event(self) -> dict[str, Any]:
        return {"type": "error", "code": self.code, "message": self.message}


Action = BeginUtterance | QueueSegments | EndOfInput | CancelUtterance | SendError


class ProtocolError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _number(msg: dict[str, Any], key: str, default: float, lo: float, hi: float) -> float:
    value = msg.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProtocolError("bad_value", f"{key!r} must be a number")
    if not lo <= float(value) <= hi:
        raise ProtocolError("bad_value", f"{key!r} must be between {lo} and {hi}, got {value}")
    return float(value)


def parse_controls(msg: dict[str, Any]) -> Controls:
    """Controls from a ``start`` message (or an HTTP body); range-checked.

    A free-text ``prompt`` ("用愤怒的语气", "a bit sad") sets ``emotion`` and ``intensity``
    when they are not given explicitly.
    """
    emotion = msg.get("emotion") or "neutral"
    prompt = msg.get("prompt")
    if prompt is not None:
        if not isinstance(prompt, str) or len(prompt) > 500:
            raise ProtocolError("bad_value", "'prompt' must be a string of at most 500 characters")
        if not msg.get("emotion"):
            guess = parse_prompt(prompt)
            emotion = guess.label
            if msg.get("intensity") is None:
                msg = {**msg, "intensity": guess.intensity}
    if not isinstance(emotion, str) or emotion not in EMOTIONS:
        raise ProtocolError("bad_value", f"'emotion' must be one of {list(EMOTIONS)}")
    return Controls(
        speed=_number(msg, "speed", 1.0, 0.5, 2.0),
        pitch_shift=_number(msg, "pitch_shift", 0.0, -12.0, 12.0),
        energy=_number(msg, "energy", 1.0, 0.5, 2.0),
        emotion=emotion,
        intensity=_number(msg, "intensity", 1.0, 0.0, 1.0),
    )


def parse_format(raw: Any) -> OutputFormat:
    if raw is None:
        return OutputFormat()
    if not isinstance(raw, dict):
        raise ProtocolError("bad_format", "'format' must be an object")
    try:
        return OutputFormat(
            codec=raw.get("codec", "opus"),
            sample_rate=int(raw.get("sample_rate", 48000)),
            bitrate=int(raw.get("bitrate", 32000)),
        )
    except (FormatError, TypeError, ValueError) as exc:
        raise ProtocolError("bad_format", str(exc)) from exc


@dataclass
class SessionProtocol:
    """Protocol state for one WebSocket connection (any number of utterances in turn)."""

    lookup_voice: Callable[[str], VoiceInfo | None]
    default_voice: str = "joe"
    max_text_chars: int = 5000
    new_stream_id: Callable[[], str] = field(default=lambda: "")
    # Why a known voice cannot speak here (e.g. a clone with no model for it), else None.
    unavailable: Callable[[str], str | None] = field(default=lambda _id: None)
    state: State = "idle"
    _segmenter: Segmenter = field(default_factory=Segmenter)
    _chars: int = 0
    _request: StartRequest | None = None

    @property
    def request(self) -> StartRequest | None:
        return self._request

    def receive_bytes(self, data: bytes) -> list[Action]:
        return [
            SendError(
                "binary_not_allowed", "send JSON text frames; audio flows server → client only"
            )
        ]

    def receive_text(self, raw: str) -> list[Action]:
        try:
            msg = json.loads(raw)
        except json.JSONDecodeError as exc:
            return [SendError("bad_json", f"malformed JSON: {exc.msg} at position {exc.pos}")]
        if not isinstance(msg, dict):
            return [SendError("bad_message", "a message must be a JSON object")]
        kind = msg.get("type")
        handler = {
            "start": self._on_start,
            "text": self._on_text,
            "flush": self._on_flush,
            "end": self._on_end,
            "cancel": self._on_cancel,
        }.get(kind if isinstance(kind, str) else "")
        if handler is None:
            return [SendError("unknown_type", f"unknown message type {kind!r}; expected "
                              "start, text, flush, end or cancel")]  # fmt: skip
        try:
            return handler(msg)
        except ProtocolError as exc:
            return [SendError(exc.code, exc.message)]

    def utterance_finished(self) -> None:
        """The I/O layer reports the utterance's audio is complete (``done`` sent)."""
        self._reset()

    # -- handlers -----------------------------------------------------------------
    def _on_start(self, msg: dict[str, Any]) -> list[Action]:
        if self.state != "idle":
            raise ProtocolError(
                "already_started", "an utterance is in progress; send end or cancel first"
            )
        voice_id = msg.get("voice") or self.default_voice
        if not isinstance(voice_id, str):
            raise ProtocolError("bad_value", "'voice' must be a string")
        info = self.lookup_voice(voice_id)
        if info is None:
            reason = self.unavailable(voice_id)
            if reason:
                raise ProtocolError("voice_unavailable", reason)
            raise ProtocolError("unknown_voice", f"unknown voice {voice_id!r}; see GET /v1/voices")
        controls = parse_controls(msg)
        try:
            check_controls(info, controls)
            if msg.get("reference_audio") is not None and "speaker" not in info.controls:
                raise UnsupportedControl(info.id, {"speaker"})
        except UnsupportedControl as exc:
            raise ProtocolError("unsupported_control", str(exc)) from exc
        fmt = parse_format(msg.get("format"))
        timestamps = bool(msg.get("timestamps", False))
        request = StartRequest(info, controls, fmt, timestamps, self.new_stream_id())
        self._reset()
        self._request = request
        self.state = "open"
        started = {
            "type": "started",
            "stream_id": request.stream_id,
            "sample_rate": fmt.sample_rate,
            "codec": fmt.codec,
            "frame_ms": FRAME_MS,
            "voice": info.id,
            "controls": info.controls_report(),
        }
        return [BeginUtterance(request, started)]

    def _require_open(self, what: str) -> None:
        if self.state == "idle":
            raise ProtocolError("not_started", f"'{what}' before 'start'")
        if self.state == "ending":
            raise ProtocolError("already_ended", f"'{what}' after 'end'; wait for 'done'")

    def _on_text(self, msg: dict[str, Any]) -> list[Action]:
        self._require_open("text")
        text = msg.get("text")
        if not isinstance(text, str):
            raise ProtocolError("bad_value", "'text' must be a string")
        text = normalize(text) if text.strip() else text
        if self._chars + len(text) > self.max_text_chars:
            raise ProtocolError(
                "text_too_long",
                f"utterance text over {self.max_text_chars} characters; this message was not "
                "spoken (send end and start a new utterance)",
            )
        self._chars += len(text)
        segments = self._segmenter.feed(text)
        return [QueueSegments(segments)] if segments else []

    def _on_flush(self, msg: dict[str, Any]) -> list[Action]:
        self._require_open("flush")
        segments = self._segmenter.flush()
        return [QueueSegments(segments)] if segments else []

    def _on_end(self, msg: dict[str, Any]) -> list[Action]:
        self._require_open("end")
        actions: list[Action] = []
        segments = self._segmenter.flush()
        if segments:
            actions.append(QueueSegments(segments))
        if self._segmenter.emitted == 0:
            actions.append(SendError("empty_text", "the utterance had no speakable text"))
        self.state = "ending"
        actions.append(EndOfInput())
        return actions

    def _on_cancel(self, msg: dict[str, Any]) -> list[Action]:
        if self.state == "idle":
            raise ProtocolError("not_started", "'cancel' with no utterance in progress")
        self._reset()
        return [CancelUtterance()]

    def _reset(self) -> None:
        self.state = "idle"
        self._segmenter = Segmenter()
        self._chars = 0
        self._request = None
