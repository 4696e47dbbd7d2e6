"""One WebSocket utterance's state: its stream slot, segment queue and task, what it sent.

A v1 utterance, or one context of a v1.1 connection
(:mod:`emostream.transport.websocket.contexts`): its binary frames carry the context's channel
and a sequence number (:mod:`emostream.transport.websocket.frames`), its events the
``context_id``. With word timestamps it keeps every word it announced and the samples it sent, for the ``done`` report. No I/O here:
:mod:`emostream.transport.websocket.connection` runs the task and sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from emostream.stream.service import Slot
from emostream.transport.edge.limits import StreamPermit
from emostream.transport.websocket.contexts import tagged
from emostream.transport.websocket.frames import encode_frame
from emostream.transport.websocket.protocol import StartRequest
from emostream.transport.websocket.text_sources import SegmentSource

END = object()  # put on an utterance's queue after its last segment


async def segment_texts(queue: asyncio.Queue[object]) -> AsyncIterator[str]:
    """The segments put on ``queue``, up to :data:`END`."""
    while True:
        item = await queue.get()
        if item is END:
            return
        assert isinstance(item, str)
        yield item


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

    def frame(self, payload: bytes) -> bytes:
        """The binary frame for one packet: bare (v1), or with the v1.1 header."""
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
