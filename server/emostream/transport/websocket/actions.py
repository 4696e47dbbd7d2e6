"""What the WebSocket protocol's state machine asks of the I/O layer (sans-I/O): a validated
``start`` (:class:`StartRequest`) and the actions
(:class:`~emostream.transport.websocket.protocol.SessionProtocol` returns them; the I/O layer,
:mod:`emostream.transport.websocket.connection`, carries them out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from emostream.text.frontend import SegmentSource
from emostream.text.pron.inline import Problem
from emostream.transport.websocket.start_request import StartRequest


@dataclass(frozen=True)
class BeginUtterance:
    request: StartRequest
    started_event: dict[str, Any]


@dataclass(frozen=True)
class QueueSegments:
    texts: list[str]
    # With word timestamps: one per text, where its characters came from.
    sources: tuple[SegmentSource, ...] = ()


@dataclass(frozen=True)
class EndOfInput:
    """No more text: the utterance finishes once queued segments are spoken."""


@dataclass(frozen=True)
class CancelUtterance:
    """Stop audio now and report ``done`` with ``cancelled: true``."""


@dataclass(frozen=True)
class Dropped:
    """A ``text``, ``flush``, ``end`` or ``cancel`` for an utterance whose ``start`` was
    refused: not answered (the refusal was its one answer), only counted."""

    kind: str


@dataclass(frozen=True)
class SendError:
    code: str
    message: str

    @property
    def event(self) -> dict[str, Any]:
        return {"type": "error", "code": self.code, "message": self.message}


@dataclass(frozen=True)
class OverrideError(SendError):
    """A pronunciation override the front end did not apply (``bad_pronunciation``,
    ``unsupported_control``; its word is read as written): ``span`` is it as written and its
    offsets in the utterance's text as sent."""

    span: tuple[str, int, int] = ("", 0, 0)

    @property
    def event(self) -> dict[str, Any]:
        text, start, end = self.span
        return {**super().event, "span": {"text": text, "char_start": start, "char_end": end}}

    @classmethod
    def of(cls, problem: Problem) -> OverrideError:
        return cls(problem.code, problem.message, (problem.span, problem.start, problem.end))


@dataclass(frozen=True)
class EnqueueLine:
    """A ``line`` (danmaku, chat) to queue: spoken as its own utterance once the socket is
    idle, in priority order, unless its TTL runs out first (the I/O layer's
    :class:`~emostream.transport.websocket.line_queue.LineQueue`)."""

    id: str
    text: str
    priority: int
    ttl_s: float
    fields: dict[str, Any]  # the ``start`` fields it is spoken with (validated)


@dataclass(frozen=True)
class ClearLines:
    """Drop every waiting line (the one speaking, if any, goes on)."""


Action = (
    BeginUtterance | QueueSegments | EndOfInput | CancelUtterance | SendError | EnqueueLine
    | ClearLines | Dropped
)  # fmt: skip
