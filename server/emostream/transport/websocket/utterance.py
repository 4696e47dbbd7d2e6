"""One WebSocket utterance's state: its stream slot, segment queue and task, what it sent.

A v1 utterance, or one context of a v1.1 connection
(:mod:`emostream.transport.websocket.contexts`): its binary frames carry the context's channel
and a sequence number (:mod:`emostream.transport.websocket.frames`), its events the
``context_id``. With word timestamps it keeps every word it announced and the samples it sent,
for the ``done`` report. No I/O here: :mod:`emostream.transport.websocket.connection` runs the
task and sends.

An utterance is admitted (:func:`admit`: a stream permit from the key's limits, then a slot from
the service) before ``started`` is sent; a refusal is the ``start``'s one answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from emostream.codec.packetizer import FRAME_MS
from emostream.stream.service import Busy, Slot, SpeechService
from emostream.stream.streamer import Packet
from emostream.text.frontend import SegmentSource
from emostream.transport.edge.limits import KeyLimits, LimitExceeded, StreamPermit
from emostream.transport.errors import retry_after_ms
from emostream.transport.rooms.hub import RoomTap
from emostream.transport.websocket.contexts import tagged
from emostream.transport.websocket.frames import encode_frame
from emostream.transport.websocket.protocol import (
    EndOfInput,
    QueueSegments,
    SendError,
)
from emostream.transport.websocket.start_request import StartRequest

END = object()  # put on an utterance's queue after its last segment


async def segment_texts(queue: asyncio.Queue[object]) -> AsyncIterator[str]:
    """The segments put on ``queue``, up to :data:`END`."""
    while True:
        item = await queue.get()
        if item is END:
            return
        assert isinstance(item, str)
        yield item


@dataclass(frozen=True)
class BusyRefusal(SendError):
    """The ``busy`` error: it says when a new ``start`` is likely to be admitted."""

    retry_after_ms: int = 0

    @property
    def event(self) -> dict[str, Any]:
        return {**super().event, "retry_after_ms": self.retry_after_ms}


def admit(
    service: SpeechService, limits: KeyLimits, principal: str | None
) -> tuple[Slot, StreamPermit] | SendError:
    """A stream permit (the key's concurrent streams) and a slot (the service's admission),
    taken before ``started`` is sent; or the refusal that is the ``start``'s one answer."""
    try:
        permit = limits.open_stream(principal)
    except LimitExceeded as exc:
        return SendError(exc.code, exc.message)
    try:
        slot = service.admit()
    except Busy as exc:
        permit.release()
        return BusyRefusal("busy", f"{exc}; retry shortly", retry_after_ms(exc))
    return slot, permit


@dataclass(eq=False)
class Utterance:
    """One started utterance: its slot, its segment queue and its task."""

    req: StartRequest
    slot: Slot
    permit: StreamPermit
    queue: asyncio.Queue[object] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    done_sent: bool = False
    # With ``word_timestamps`` asked: ``done`` reports the audio sent and the words within it.
    report_sent: bool = False
    sources: list[SegmentSource] = field(default_factory=list)  # one per queued segment
    words: list[dict[str, Any]] = field(default_factory=list)  # every word announced
    sent_samples: int = 0  # audio samples in the binary frames sent (output rate)
    line_id: str | None = None  # a queued line's id (echoed in ``done``)
    context_id: str | None = None  # v1.1: its context (None: a v1 utterance)
    channel: int | None = None  # v1.1: the channel in its binary frames' header
    frames: int = 0  # binary frames sent so far (the next frame's sequence number)
    room: RoomTap | None = None  # published into a room as well (start.room)

    def take(self, action: object) -> None:
        """Segments to speak (:class:`QueueSegments`) or the end of its text
        (:class:`EndOfInput`), onto its queue; other actions are not its own."""
        if isinstance(action, QueueSegments):
            self.sources.extend(action.sources)
            for text in action.texts:
                self.queue.put_nowait(text)
        elif isinstance(action, EndOfInput):
            self.queue.put_nowait(END)

    def played_s(self, packet: Packet) -> float:
        """How long a listener plays ``packet``: an Opus packet its whole frame (the last
        one's padding too), PCM its samples."""
        if self.req.fmt.codec == "opus":
            return FRAME_MS / 1000.0
        return len(packet.data) / 2 / self.req.fmt.sample_rate

    def asked(self, body: dict[str, Any]) -> bool:
        """Whether the client asked for this event (a room's listeners get ``words`` and
        ``mouth`` events whether the publisher asked for them or not)."""
        kind = body.get("type")
        if kind == "words":
            return self.req.word_timestamps
        return self.req.mouth if kind == "mouth" else True

    def relay(self, body: dict[str, Any]) -> None:
        """An event of the utterance, to its room's listeners (``started``, ``done``, or one
        the room relays)."""
        if self.room is not None:
            kind = body.get("type")
            if kind == "started":
                self.room.started(body)
            elif kind == "done":
                self.room.done(body)
            else:
                self.room.event(body)

    def frame(self, payload: bytes) -> bytes:
        """The binary frame for one packet: bare (v1), or with the v1.1 header."""
        if self.room is not None:
            self.room.frame(payload)
        if self.channel is None:
            return payload
        data = encode_frame(self.channel, self.frames, payload)
        self.frames += 1
        return data

    def tag(self, body: dict[str, Any]) -> dict[str, Any]:
        """An event of this utterance, with its ``context_id`` on a v1.1 connection."""
        return tagged(body, self.context_id)

    def place_words(self, body: dict[str, Any]) -> dict[str, Any]:
        """A ``words`` event with its character offsets moved from the segment's text to the
        request text, and each word as the client wrote it; remembered for ``done``."""
        index = body.get("index", -1)
        source = self.sources[index] if 0 <= index < len(self.sources) else None
        for word in body["words"]:
            if source is not None:
                start, end, written = source.span(word["char_start"], word["char_end"])
                word.update(word=written or word["word"], char_start=start, char_end=end)
            self.words.append(word)
        return body

    def sent_report(self) -> dict[str, Any]:
        rate = self.req.fmt.sample_rate
        return {
            "sent_samples": self.sent_samples,
            "sent_ms": round(1000.0 * self.sent_samples / rate, 3),
            "words_sent": [w for w in self.words if w["end_sample"] <= self.sent_samples],
        }
