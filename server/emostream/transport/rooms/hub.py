"""Rooms: one synthesis, many listeners (sans-I/O: no sockets, no tasks, no clock).

A *room* is a name, an owner (the principal that created it: an API key's, or ``""`` on a
server without keys) and a secret token. A publisher (a ``start`` or ``line`` with ``room``,
on the owner's connection) feeds each of its utterances into the room through a
:class:`RoomTap`; the room hands the very same objects (each event's JSON text, encoded once,
and each binary frame's bytes) to every listener's :class:`Listener` outbox. The synthesis runs
once, whatever the number of listeners.

Rules (docs/protocol.md, "Rooms"):

* A room plays one utterance at a time. A newer one cuts the one in progress off for its
  listeners: they get its ``done`` with ``cancelled`` and ``superseded``, then the new
  ``started``; what the older one still sends is dropped.
* A listener hears from the next utterance that starts: one in progress when it joins is not
  sent to it (it would start mid-word, with words and mouth shapes it never got).
* A listener's outbox holds at most ``queue_bytes``. Publishing never waits for a listener: one
  whose outbox would overflow is dropped (``slow_listener``: its outbox is replaced by that
  error, and the I/O layer closes it), and the others and the publisher go on as before.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from emostream.stream.metrics import Metrics

Message = str | bytes
# Events a room relays (its listeners' protocol: the schema's room_event); others (timestamps,
# errors of the publisher's) stay on the publisher's socket.
RELAYED = frozenset({"segment", "words", "mouth"})
_DONE_FIELDS = ("audio_ms", "first_audio_ms", "rtf", "cancelled", "segments", "cached",
                "truncated", "id")  # fmt: skip
_PUBLISHER_ONLY = ("context_id", "channel")


class RoomError(Exception):
    """A refused room request: HTTP ``status``, the protocol's ``code`` and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


@dataclass(eq=False)
class Listener:
    """One listener's outbox: what the I/O layer sends next, in order. ``wake`` tells it that
    there is something (or that it must close: ``closing`` holds the error to send first).
    ``bytes`` counts a binary frame's bytes and an event's characters."""

    wake: Callable[[], None]
    max_bytes: int
    items: deque[Message] = field(default_factory=deque)
    bytes: int = 0
    closing: tuple[str, str] | None = None  # (code, message) of the error before the close

    def deliver(self, msg: Message) -> bool:
        """Queue ``msg``; False (nothing queued) when it would pass ``max_bytes``."""
        if self.closing is not None:
            return True
        if self.bytes + len(msg) > self.max_bytes:
            return False
        self.items.append(msg)
        self.bytes += len(msg)
        self.wake()
        return True

    def take(self) -> Message | None:
        if not self.items:
            return None
        msg = self.items.popleft()
        self.bytes -= len(msg)
        return msg

    def close(self, code: str, message: str) -> None:
        """Drop what waits; the I/O layer sends the error and closes."""
        if self.closing is None:
            self.items.clear()
            self.bytes = 0
            self.closing = (code, message)
        self.wake()


@dataclass
class RoomCounts:
    """What the rooms did; mirrored in the Prometheus ``metrics`` when given."""

    metrics: Metrics | None = None
    utterances: int = 0  # utterances relayed into a room
    frames: int = 0  # binary frames handed to listeners (each listener's counted)
    dropped: dict[str, int] = field(default_factory=dict)  # listeners dropped, by reason

    def utterance(self) -> None:
        self.utterances += 1
        if self.metrics is not None:
            self.metrics.room_utterances.inc()

    def frame(self, listeners: int) -> None:
        self.frames += listeners
        if self.metrics is not None and listeners:
            self.metrics.room_frames.inc(listeners)

    def drop(self, reason: str) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + 1
        if self.metrics is not None:
            self.metrics.room_dropped.labels(reason).inc()


@dataclass(eq=False)
class Room:
    name: str
    owner: str
    token: str
    created: str = ""
    max_listeners: int = 32
    queue_bytes: int = 2 << 20
    counts: RoomCounts = field(default_factory=RoomCounts)
    listeners: list[Listener] = field(default_factory=list)
    utterances: int = 0  # started so far
    _source: str | None = None  # the publisher's utterance being relayed (its stream id)
    _audience: list[Listener] = field(default_factory=list)  # who hears it
    _frames: int = 0  # its frames so far
    _segments: int = 0

    @property
    def speaking(self) -> bool:
        return self._source is not None

    def token_ok(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.token.encode())

    def view(self) -> dict[str, Any]:
        """The room as ``POST``/``GET /v1/rooms`` describe it to its owner."""
        return {
            "room": self.name,
            "token": self.token,
            "listen_path": f"/live?room={self.name}&token={self.token}",
            "listeners": len(self.listeners),
            "speaking": self.speaking,
            "utterances": self.utterances,
            "created": self.created,
        }

    # -- listeners ------------------------------------------------------------------------
    def join(self, wake: Callable[[], None]) -> Listener:
        """A new listener (its outbox holds the ``room`` greeting); RoomError when full."""
        if len(self.listeners) >= self.max_listeners:
            raise RoomError(429, "too_many_listeners",
                            f"room {self.name!r} has {self.max_listeners} listeners already")  # fmt: skip
        listener = Listener(wake, self.queue_bytes)
        self.listeners.append(listener)
        hello = {"type": "room", "room": self.name, "listeners": len(self.listeners),
                 "speaking": self.speaking}  # fmt: skip
        listener.deliver(json.dumps(hello))
        return listener

    def leave(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)
        if listener in self._audience:
            self._audience.remove(listener)

    def close(self, code: str, message: str) -> None:
        """Every listener gets ``code`` and is closed (the room deleted, its token changed)."""
        for listener in list(self.listeners):
            listener.close(code, message)
            self.leave(listener)
        self._source = None

    # -- publishing (through a RoomTap) -----------------------------------------------------
    def start(self, source: str, started: dict[str, Any]) -> None:
        if self._source is not None:  # a newer utterance takes the room
            self._send_event(self._superseded())
        self._source = source
        self.utterances += 1
        self.counts.utterance()
        self._frames = self._segments = 0
        self._audience = list(self.listeners)
        self._send_event({**started, "room": self.name, "utterance": self.utterances})

    def event(self, source: str, body: dict[str, Any]) -> None:
        if source == self._source:
            self._segments += body.get("type") == "segment"
            self._send_event(body)

    def frame(self, source: str, data: bytes) -> None:
        if source != self._source:
            return
        self._frames += 1
        sent = 0
        for listener in list(self._audience):
            if listener.deliver(data):
                sent += 1
            else:
                self._drop_slow(listener)
        self.counts.frame(sent)

    def done(self, source: str, done: dict[str, Any]) -> None:
        if source != self._source:
            return
        self._send_event(done)
        self._source = None
        self._audience = []

    def notice(self, body: dict[str, Any]) -> None:
        """An event for every listener, whatever is playing (the publisher's line queue)."""
        text = json.dumps(body, ensure_ascii=False)
        for listener in list(self.listeners):
            if not listener.deliver(text):
                self._drop_slow(listener)

    def _superseded(self) -> dict[str, Any]:
        return {"type": "done", "audio_ms": self._frames * 20.0, "first_audio_ms": None,
                "rtf": None, "cancelled": True, "segments": self._segments, "superseded": True}  # fmt: skip

    def _send_event(self, body: dict[str, Any]) -> None:
        text = json.dumps(body, ensure_ascii=False)  # once, whatever the listeners
        for listener in list(self._audience):
            if not listener.deliver(text):
                self._drop_slow(listener)

    def _drop_slow(self, listener: Listener) -> None:
        kib = self.queue_bytes // 1024
        listener.close("slow_listener", f"this listener fell {kib} KiB behind the room; "
                       "it was dropped (reconnect to listen again)")  # fmt: skip
        self.leave(listener)
        self.counts.drop("slow_listener")


class RoomTap:
    """One published utterance's way into its room: the publisher's events as its listeners'
    protocol has them (no ``context_id``, ``channel`` or publisher-only reports), its binary
    frames' payloads as they are."""

    def __init__(self, room: Room, source: str, *, codec_delay_ms: float) -> None:
        self.room = room
        self.source = source
        self.codec_delay_ms = codec_delay_ms

    def started(self, event: dict[str, Any]) -> None:
        body = {k: v for k, v in event.items() if k not in _PUBLISHER_ONLY}
        body["codec_delay_ms"] = self.codec_delay_ms if body.get("codec") == "opus" else 0.0
        self.room.start(self.source, body)

    def event(self, body: dict[str, Any]) -> None:
        if body.get("type") in RELAYED:
            self.room.event(self.source, {k: v for k, v in body.items() if k != "context_id"})

    def frame(self, payload: bytes) -> None:
        self.room.frame(self.source, payload)

    def done(self, done: dict[str, Any]) -> None:
        body = {"type": "done", **{k: done[k] for k in _DONE_FIELDS if k in done}}
        self.room.done(self.source, body)


def new_token() -> str:
    return secrets.token_urlsafe(24)
