"""Cartesia's TTS WebSocket (``/tts/websocket``), translated to and from the native protocol
(sans-I/O); the request fields it shares with ``POST /tts/bytes`` and ``/tts/sse``.

Every generation request names a ``context_id``. The first for a context opens it (a native
``start``: ``voice`` ``{"mode": "id", "id": ...}`` or an id, PCM at the source rate of its raw
``output_format``, word timestamps on; ``speed`` and ``generation_config`` ``speed`` and
``emotion`` as native controls); its ``transcript`` follows as ``text``; ``flush: true`` adds a
``flush``; ``continue: false`` ends the input (``end``). Later requests for the context add
their transcript (their voice and format are the context's). ``{"context_id", "cancel": true}``
stops it (native ``cancel``; nothing more is sent for it, as Cartesia does).

Server messages: ``{"type": "chunk", "data": base64, "done": false, "status_code": 206,
"step_time", "context_id"}``, ``{"type": "timestamps", "word_timestamps": {"words", "start",
"end"}}`` (with ``add_timestamps``; seconds from the context's start), ``{"type": "done"}``, and
``{"type": "error", "error_code", "title", "message", "status_code", "done"}``. Fields with no
equivalent are named in ``warnings`` on the context's first chunk (docs/compat.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from emostream.text.emotion import EMOTIONS
from emostream.transport.compat.alignment import cartesia_words
from emostream.transport.compat.formats import FormatRefused, cartesia_format
from emostream.transport.compat.session import CompatSession, Track, Turn, b64
from emostream.transport.messages import ProtocolError, load_message

SPEEDS = {"slowest": 0.6, "slow": 0.8, "normal": 1.0, "fast": 1.25, "fastest": 1.5}
# HTTP-like status of a native error code (what Cartesia's error messages carry).
STATUS = {"unknown_voice": 404, "voice_unavailable": 409, "busy": 429, "rate_limited": 429,
          "too_many_streams": 429, "too_many_contexts": 429, "unauthorized": 401,
          "internal": 500, "shutting_down": 503, "store_unavailable": 503}  # fmt: skip
IGNORED = ("add_phoneme_timestamps", "pronunciation_dict_id", "normalization", "locale")


def status_of(code: str) -> int:
    return STATUS.get(code, 400)


def error_body(code: str, message: str, status: int | None = None) -> dict[str, Any]:
    """Cartesia's error object (an HTTP body; a WebSocket message adds type and done)."""
    status = status_of(code) if status is None else status
    title = code.replace("_", " ").capitalize()
    return {"error_code": code, "title": title, "message": message, "error": message,
            "status_code": status}  # fmt: skip


def voice_id(raw: object) -> str:
    """``voice``: an id, or ``{"mode": "id", "id": ...}``."""
    if isinstance(raw, dict):
        mode = raw.get("mode", "id")
        if mode != "id":
            raise ProtocolError("bad_value", f"voice mode {str(mode)[:40]!r} is not offered here; "
                                "use {\"mode\": \"id\", \"id\": <voice id>}", "voice")  # fmt: skip
        raw = raw.get("id")
    if not isinstance(raw, str) or not raw.strip():
        raise ProtocolError("bad_value", "'voice' must be a voice id or {\"mode\": \"id\", "
                            "\"id\": <voice id>}", "voice")  # fmt: skip
    return raw


def controls(msg: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Native ``start`` fields from ``speed`` and ``generation_config``, and warnings for the
    fields read in vain."""
    fields: dict[str, Any] = {}
    warnings = [f"{k} is not applied here" for k in IGNORED if msg.get(k) not in (None, False)]
    speed = msg.get("speed")
    if isinstance(speed, str):
        if speed not in SPEEDS:
            raise ProtocolError("bad_value", f"'speed' must be one of {list(SPEEDS)} or a number",
                                "speed")  # fmt: skip
        speed = SPEEDS[speed]
    config = msg.get("generation_config")
    if config is not None and not isinstance(config, dict):
        raise ProtocolError("bad_value", "'generation_config' must be an object")
    config = config or {}
    if config.get("speed") is not None:
        speed = config["speed"]
    if speed is not None and speed != 1.0:
        fields["speed"] = speed
    emotion = config.get("emotion")
    if emotion is not None:
        if not isinstance(emotion, str) or not emotion.strip():
            raise ProtocolError("bad_value", "'generation_config.emotion' must be a string")
        if emotion in EMOTIONS:
            fields["emotion"] = emotion
        else:  # one of Cartesia's 60 names: read as a free-text emotion prompt
            fields["prompt"] = emotion
    volume = config.get("volume")
    if volume is not None and volume != 1.0:
        warnings.append("generation_config.volume has no equivalent here and was ignored")
    return fields, warnings


class CartesiaSession(CompatSession):
    """One ``/tts/websocket`` connection (module docs). ``aliases``: voice names the server
    maps to its voice ids (OpenAI's, by default)."""

    def __init__(
        self, *, aliases: Mapping[str, str] | None = None, max_message_bytes: int = 65536
    ) -> None:
        super().__init__(max_message_bytes=max_message_bytes)
        self.aliases = dict(aliases or {})

    def receive(self, raw: str) -> Turn:
        too_large = self.oversized(raw)
        if too_large is not None:
            return self._error(None, "too_large", too_large, done=False)
        external: str | None = None
        try:
            msg = load_message(raw)
            context = msg.get("context_id")
            if not isinstance(context, str) or not context or len(context) > 256:
                raise ProtocolError("bad_value", "'context_id' must be a string of 1-256 "
                                    "characters (this server needs one on every request)")  # fmt: skip
            external = context
            return self._request(external, msg)
        except (ProtocolError, FormatRefused) as exc:
            code, message = (exc.code, exc.message) if isinstance(exc, ProtocolError) else (
                "bad_format", str(exc))  # fmt: skip
            # done: no context is open under that id (the request did not open one)
            done = external is None or self.track(external) is None
            return self._error(external, code, message, done=done)

    def _request(self, external: str, msg: dict[str, Any]) -> Turn:
        track = self.track(external)
        if msg.get("cancel") is True:
            if track is None:
                return Turn()
            self.drop(track)  # nothing more is sent for it
            return Turn(forward=[track.native("cancel")])
        transcript = msg.get("transcript", "")
        if not isinstance(transcript, str):
            raise ProtocolError("bad_value", "'transcript' must be a string", "transcript")
        more = msg.get("continue", False)
        if not isinstance(more, bool):
            raise ProtocolError("bad_value", "'continue' must be true or false", "continue")
        if track is None:
            if not transcript and not more:  # the end of a context that never had text
                return Turn(reply=[{"type": "done", "done": True, "status_code": 200,
                                    "context_id": external}])  # fmt: skip
            track = self._open(external, msg)
            turn = Turn(forward=[self._start(track, msg)])
            self.answering = track.internal
        elif track.ending:
            raise ProtocolError("already_ended", f"context {external!r} had continue: false; "
                                "use a new context_id")  # fmt: skip
        else:
            turn = Turn()
        if transcript:
            turn.forward.append(track.text(transcript))
        if msg.get("flush") is True and more:
            track.flushes += 1
            turn.forward.append(track.native("flush"))
        if not more:
            track.ending = True
            turn.forward.append(track.native("end"))
        return turn

    def _open(self, external: str, msg: dict[str, Any]) -> Track:
        fmt = cartesia_format(msg.get("output_format"), containers=("raw",))
        track = self.open(external, fmt)
        track.timestamps = msg.get("add_timestamps") is True
        return track

    def _start(self, track: Track, msg: dict[str, Any]) -> dict[str, Any]:
        fields, warnings = controls(msg)
        track.warnings = warnings
        return track.native(
            "start", voice=self._voice(msg.get("voice")), word_timestamps=True,
            format={"codec": "pcm_s16le", "sample_rate": track.fmt.source_rate}, **fields,
        )  # fmt: skip

    def _voice(self, raw: object) -> str:
        voice = voice_id(raw)
        return self.aliases.get(voice, voice)

    # -- native output -------------------------------------------------------------------
    def audio(self, track: Track, data: bytes) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"type": "chunk", "data": b64(data), "done": False,
                                "status_code": 206, "step_time": 0.0,
                                "context_id": track.external}  # fmt: skip
        if track.messages == 0 and track.warnings:
            body["warnings"] = track.warnings
        track.messages += 1
        return [body]

    def on_words(self, track: Track, words: list[dict[str, Any]]) -> Turn:
        if not track.timestamps or not words:
            return Turn()
        return Turn(reply=[{"type": "timestamps", "context_id": track.external,
                            "status_code": 206, "done": False,
                            "word_timestamps": cartesia_words(words)}])  # fmt: skip

    def on_done(self, track: Track, *, cancelled: bool) -> Turn:
        if cancelled:
            return Turn()
        return Turn(reply=[{"type": "done", "done": True, "status_code": 200,
                            "context_id": track.external}])  # fmt: skip

    def on_error(self, track: Track | None, code: str, message: str, *, refused: bool) -> Turn:
        return self._error(None if track is None else track.external, code, message, done=refused)

    def _error(self, external: str | None, code: str, message: str, *, done: bool) -> Turn:
        body: dict[str, Any] = {"type": "error", **error_body(code, message), "done": done}
        if external is not None:
            body["context_id"] = external
        return Turn(reply=[body])
