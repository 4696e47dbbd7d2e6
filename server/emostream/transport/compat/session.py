"""What the compatible WebSockets share (sans-I/O): contexts mapped onto native contexts, the
native events and audio frames turned back into the other API's messages.

A :class:`CompatSession` reads the other API's client messages (:meth:`CompatSession.receive`)
and answers with a :class:`Turn`: native protocol v1.1 messages to forward (``start``,
``text``, ``flush``, ``end``, ``cancel``, every one with a ``context_id``), messages of its own
API to send now, and whether to close the socket. The I/O layer feeds it the native events
(:meth:`CompatSession.event`) and binary frames (:meth:`CompatSession.frame`) the native
connection would have sent, and sends what comes back. Each context of the other API is a
:class:`Track`: a native context of its own (ids ``c1``, ``c2``, ...: the other API's ids may be
any string), asked for PCM s16le with word timestamps at its format's source rate, and a
:class:`~emostream.transport.compat.formats.Transcoder` to the format the client asked for.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from emostream.transport.compat.alignment import CharAligner
from emostream.transport.compat.formats import CompatFormat, Transcoder
from emostream.transport.websocket.frames import FrameError, decode_frame


@dataclass(frozen=True)
class Close:
    code: int
    reason: str = ""


@dataclass
class Turn:
    """What one input gives: native messages to forward, own messages to send, a close."""

    forward: list[dict[str, Any]] = field(default_factory=list)
    reply: list[dict[str, Any]] = field(default_factory=list)
    close: Close | None = None

    def extend(self, other: Turn) -> Turn:
        self.forward += other.forward
        self.reply += other.reply
        self.close = self.close or other.close
        return self


@dataclass(eq=False)
class Track:
    """One context of the other API and the native context that speaks it."""

    external: str
    internal: str
    fmt: CompatFormat
    warnings: list[str] = field(default_factory=list)  # what the request asked for in vain
    started: bool = False  # the native ``started`` came (not refused)
    ending: bool = False  # its end was forwarded
    channel: int | None = None
    transcoder: Transcoder | None = None
    aligner: CharAligner = field(default_factory=CharAligner)
    alignment: dict[str, list[Any]] | None = None  # for the next audio message
    timestamps: bool = True  # send word timestamps (Cartesia: add_timestamps)
    messages: int = 0  # audio messages sent
    flushes: int = 0

    def native(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "context_id": self.internal, **fields}

    def text(self, text: str) -> dict[str, Any]:
        self.aligner.add_text(text)
        return self.native("text", text=text)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class CompatSession:
    """The state shared by the compatible WebSockets' translators (module docs)."""

    def __init__(self, *, max_message_bytes: int = 65536) -> None:
        self.max_message_bytes = max_message_bytes
        self._tracks: dict[str, Track] = {}  # by external id
        self._internal: dict[str, Track] = {}
        self._channels: dict[int, Track] = {}
        self._opened = 0
        self.answering: str | None = None  # the native context of the message being handled

    # -- contexts -----------------------------------------------------------------------
    @property
    def tracks(self) -> list[Track]:
        return list(self._tracks.values())

    def live(self, internal: str) -> bool:
        """Whether the native context ``internal`` still stands for a context of the client's
        (not refused, cancelled or done)."""
        return internal in self._internal

    def track(self, external: str) -> Track | None:
        return self._tracks.get(external)

    def open(self, external: str, fmt: CompatFormat) -> Track:
        self._opened += 1
        track = Track(external, f"c{self._opened}", fmt)
        self._tracks[external] = track
        self._internal[track.internal] = track
        return track

    def drop(self, track: Track) -> None:
        if self._tracks.get(track.external) is track:
            del self._tracks[track.external]
        self._internal.pop(track.internal, None)
        if track.channel is not None:
            self._channels.pop(track.channel, None)

    def oversized(self, raw: str) -> str | None:
        size = len(raw) if raw.isascii() else len(raw.encode("utf-8", "surrogatepass"))
        if size <= self.max_message_bytes:
            return None
        return f"a message is {size} bytes; at most {self.max_message_bytes}"

    # -- the native connection's output ------------------------------------------------------
    def event(self, body: dict[str, Any]) -> Turn:
        """A native event (``started``, ``words``, ``done``, ``error``; others are dropped)."""
        kind = body.get("type")
        context = body.get("context_id")
        internal = context if isinstance(context, str) else self.answering
        track = self._internal.get(internal) if internal is not None else None
        if internal is not None and track is None:
            return Turn()  # a context already refused or cancelled: the client was told
        if kind == "error":
            refused = track is not None and not track.started  # its start was refused
            if track is not None and refused:
                self.drop(track)
            code, message = str(body.get("code")), str(body.get("message"))
            wait = body.get("retry_after_ms")  # busy: neither API has a field for it
            if isinstance(wait, int):
                message = f"{message} (retry after {wait} ms)"
            return self.on_error(track, code, message, refused=refused)
        if track is None:
            return Turn()
        if kind == "started":
            track.started = True
            channel = body.get("channel")
            if isinstance(channel, int):
                track.channel = channel
                self._channels[channel] = track
            track.transcoder = Transcoder(track.fmt)
            return Turn()
        if kind == "words":
            return self.on_words(track, body.get("words") or [])
        if kind == "done":
            turn = Turn()
            if track.transcoder is not None:
                tail = track.transcoder.finish()
                if tail:
                    turn.reply += self.audio(track, tail)
            self.drop(track)
            return turn.extend(self.on_done(track, cancelled=bool(body.get("cancelled"))))
        return Turn()

    def frame(self, data: bytes) -> list[dict[str, Any]]:
        """A native v1.1 binary frame, as this API's audio messages (none while an encoder
        holds its look-ahead)."""
        try:
            frame = decode_frame(data)
        except FrameError:
            return []
        track = self._channels.get(frame.channel)
        if track is None or track.transcoder is None:
            return []
        audio = track.transcoder.push(frame.payload)
        return self.audio(track, audio) if audio else []

    # -- the API's own shape (subclasses) ------------------------------------------------------
    def receive(self, raw: str) -> Turn:
        raise NotImplementedError

    def binary(self) -> Turn:
        """A binary frame from the client (both APIs send JSON text only)."""
        return self.on_error(None, "binary_not_allowed", "send JSON text frames", refused=False)

    def audio(self, track: Track, data: bytes) -> list[dict[str, Any]]:
        raise NotImplementedError

    def on_words(self, track: Track, words: list[dict[str, Any]]) -> Turn:
        return Turn()

    def on_done(self, track: Track, *, cancelled: bool) -> Turn:
        raise NotImplementedError

    def on_error(self, track: Track | None, code: str, message: str, *, refused: bool) -> Turn:
        raise NotImplementedError
