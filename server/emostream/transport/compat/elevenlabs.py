"""ElevenLabs' text-to-speech WebSockets, translated to and from the native protocol (sans-I/O).

``/v1/text-to-speech/{voice_id}/stream-input`` (one context a socket) and
``.../multi-stream-input`` (contexts named by ``context_id``); docs/compat.md says what is
mapped. Client messages:

* the first (``{"text": " ", "voice_settings": {...}, "generation_config": {...}}``) opens the
  context: a native ``start`` (the voice of the URL, PCM at the format's source rate, word
  timestamps on, ``voice_settings.speed`` and the native controls it may carry); its text, if
  any, follows as ``text``;
* ``{"text": "...", "flush": true}``: ``text`` (then ``flush``);
* single stream: ``{"text": ""}`` ends the input (``end``); the socket closes after
  ``isFinal``. Multi-stream: ``{"text": ""}`` keeps a context alive (nothing is forwarded),
  ``{"context_id", "close_context": true}`` ends its input (what was sent is spoken, then
  ``isFinal``), ``{"close_socket": true}`` ends every context and closes once they are done.

Server messages: ``{"audio": base64, "isFinal": null, "alignment", "normalizedAlignment"}``
(:class:`~emostream.transport.compat.alignment.CharAligner`: a segment's characters on its
first audio message), ``{"isFinal": true}``; multi-stream adds ``contextId``. An error is
``{"message", "error": code, "code": 1008}``; a refused context also gets its ``isFinal``, and a
single stream closes (1008) when its context is refused. ``voice_settings`` that have no
equivalent (``stability``, ``similarity_boost``, ``style``, ``use_speaker_boost``) are named in
``warnings`` on the context's first message when they differ from ElevenLabs' defaults.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from emostream.transport.compat.formats import CompatFormat
from emostream.transport.compat.session import Close, CompatSession, Track, Turn, b64
from emostream.transport.messages import ProtocolError, load_message

POLICY = 1008  # ElevenLabs closes a socket it refuses with 1008
SINGLE = "0"  # the one context of a stream-input socket
# voice_settings with no equivalent here, and ElevenLabs' defaults (a default asks nothing).
UNMAPPED_SETTINGS: dict[str, object] = {
    "stability": 0.5, "similarity_boost": 0.75, "style": 0.0, "use_speaker_boost": True,
}  # fmt: skip
# voice_settings this server reads: speed, and its own controls (an extension).
NATIVE_CONTROLS = ("speed", "emotion", "intensity", "pitch_shift", "energy", "prompt")


def error_message(code: str, message: str) -> dict[str, Any]:
    return {"message": message, "error": code, "code": POLICY}


def read_voice_settings(raw: object) -> tuple[dict[str, Any], list[str]]:
    """Native ``start`` fields from ``voice_settings``, and warnings for what is ignored.
    Raises ProtocolError for a ``voice_settings`` that is not an object."""
    if raw is None:
        return {}, []
    if not isinstance(raw, dict):
        raise ProtocolError("bad_value", "'voice_settings' must be an object", "voice_settings")
    fields: dict[str, Any] = {}
    warnings: list[str] = []
    for key, value in raw.items():
        if value is None:
            continue
        if key in NATIVE_CONTROLS:
            if key != "speed" or _number(value) != 1.0:
                fields[key] = value
        elif key in UNMAPPED_SETTINGS:
            if _differs(value, UNMAPPED_SETTINGS[key]):
                warnings.append(f"voice_settings.{key} has no equivalent here and was ignored")
        else:
            warnings.append(f"voice_settings.{key} is not known here and was ignored")
    return fields, warnings


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _differs(value: object, default: object) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return value is not default
    number = _number(value)
    return number is None or not math.isclose(number, float(default))  # type: ignore[arg-type]


class ElevenLabsSession(CompatSession):
    """One ElevenLabs WebSocket (module docs). ``voice_id``: the URL's (after the server's
    aliases); ``fmt``: its ``output_format``; ``multi``: multi-stream-input."""

    def __init__(
        self, voice_id: str, fmt: CompatFormat, *, multi: bool, max_message_bytes: int = 65536
    ) -> None:
        super().__init__(max_message_bytes=max_message_bytes)
        self.voice_id = voice_id
        self.fmt = fmt
        self.multi = multi
        self._input_ended = False  # single stream: EOS received
        self._closing = False  # close_socket received

    # -- client messages ---------------------------------------------------------------
    def receive(self, raw: str) -> Turn:
        too_large = self.oversized(raw)
        if too_large is not None:
            return self._refuse(None, "too_large", too_large)
        try:
            msg = load_message(raw)
            return self._message(msg)
        except ProtocolError as exc:
            return self._refuse(None, exc.code, exc.message)

    def _message(self, msg: dict[str, Any]) -> Turn:
        if not self.multi:
            return self._single(msg)
        if msg.get("close_socket") is True:
            return self._close_socket()
        external = msg.get("context_id")
        if external is None:
            external = "default"
        if not isinstance(external, str) or not external or len(external) > 256:
            raise ProtocolError("bad_value", "'context_id' must be a string of 1-256 characters")
        track = self.track(external)
        if msg.get("close_context") is True:
            if track is None or track.ending:
                return Turn()  # already closed: nothing to do
            track.ending = True
            return Turn(forward=[track.native("end")])
        text = _text(msg)
        if track is None:
            if not text:  # a keepalive, or a flush, for no open context
                return Turn()
            if self._closing:
                raise ProtocolError("closing", "the socket is closing (close_socket)")
            return self._open(external, msg, text)
        if track.ending:
            raise ProtocolError("already_ended", f"context {external!r} was closed")
        return self._more(track, msg, text)

    def _single(self, msg: dict[str, Any]) -> Turn:
        text = _text(msg)
        track = self.track(SINGLE)
        if self._input_ended:
            raise ProtocolError("already_ended", "the input ended (text \"\"); open a new socket")
        if track is None:  # the first message (ElevenLabs' "BOS")
            if text is None:
                raise ProtocolError("bad_value", "the first message needs 'text' (\" \")")
            if text == "":
                raise ProtocolError("empty_text", "the input ended before any text")
            return self._open(SINGLE, msg, text)
        if text == "":
            self._input_ended = True
            track.ending = True
            return Turn(forward=[track.native("end")])
        return self._more(track, msg, text)

    def _open(self, external: str, msg: dict[str, Any], text: str | None) -> Turn:
        fields, warnings = read_voice_settings(msg.get("voice_settings"))
        if msg.get("pronunciation_dictionary_locators"):
            warnings.append("pronunciation_dictionary_locators are not applied here")
        track = self.open(external, self.fmt)
        track.warnings = warnings
        start = track.native(
            "start", voice=self.voice_id, word_timestamps=True,
            format={"codec": "pcm_s16le", "sample_rate": self.fmt.source_rate}, **fields,
        )  # fmt: skip
        turn = Turn(forward=[start])
        self.answering = track.internal
        return turn.extend(self._more(track, msg, text))

    def _more(self, track: Track, msg: dict[str, Any], text: str | None) -> Turn:
        turn = Turn()
        if text:  # (spaces too: the word timestamps' offsets count them)
            turn.forward.append(track.text(text))
        if msg.get("flush") is True:
            turn.forward.append(track.native("flush"))
        return turn

    def _close_socket(self) -> Turn:
        self._closing = True
        turn = Turn()
        for track in self.tracks:
            if not track.ending:
                track.ending = True
                turn.forward.append(track.native("end"))
        if not self.tracks:
            turn.close = Close(1000)
        return turn

    # -- native output -------------------------------------------------------------------
    def _tag(self, track: Track | None, body: dict[str, Any]) -> dict[str, Any]:
        if self.multi and track is not None:
            body["contextId"] = track.external
        return body

    def audio(self, track: Track, data: bytes) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"audio": b64(data), "isFinal": None,
                                "normalizedAlignment": None, "alignment": None}  # fmt: skip
        if track.alignment is not None:
            body["normalizedAlignment"] = body["alignment"] = track.alignment
            track.alignment = None
        if track.messages == 0 and track.warnings:
            body["warnings"] = track.warnings
        track.messages += 1
        return [self._tag(track, body)]

    def on_words(self, track: Track, words: list[dict[str, Any]]) -> Turn:
        alignment = track.aligner.segment(words)
        if alignment is not None:
            earlier = track.alignment
            if earlier is not None:  # a segment with no audio yet: one message for both
                span = earlier["charStartTimesMs"][-1] + earlier["charDurationsMs"][-1]
                alignment = {
                    "chars": earlier["chars"] + alignment["chars"],
                    "charStartTimesMs": earlier["charStartTimesMs"]
                    + [t + span for t in alignment["charStartTimesMs"]],
                    "charDurationsMs": earlier["charDurationsMs"] + alignment["charDurationsMs"],
                }
            track.alignment = alignment
        return Turn()

    def on_done(self, track: Track, *, cancelled: bool) -> Turn:
        final: dict[str, Any] = {"isFinal": True}
        if track.messages == 0 and track.warnings:
            final["warnings"] = track.warnings
        turn = Turn(reply=[self._tag(track, final)])
        if not self.multi or (self._closing and not self.tracks):
            turn.close = Close(1000)
        return turn

    def on_error(self, track: Track | None, code: str, message: str, *, refused: bool) -> Turn:
        return self._refuse(track, code, message, refused=refused)

    def _refuse(
        self, track: Track | None, code: str, message: str, *, refused: bool = False
    ) -> Turn:
        turn = Turn(reply=[self._tag(track, error_message(code, message))])
        if refused and track is not None:
            turn.reply.append(self._tag(track, {"isFinal": True}))
            if not self.multi:
                turn.close = Close(POLICY, code)
        return turn


def _text(msg: Mapping[str, Any]) -> str | None:
    text = msg.get("text")
    if text is not None and not isinstance(text, str):
        raise ProtocolError("bad_value", "'text' must be a string", "text")
    return text
