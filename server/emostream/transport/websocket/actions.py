"""What the WebSocket protocol's state machine asks of the I/O layer (sans-I/O): a validated
``start`` (:class:`StartRequest`) and the actions
(:class:`~emostream.transport.websocket.protocol.SessionProtocol` returns them; the I/O layer,
:mod:`emostream.transport.websocket.connection`, carries them out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from emostream.codec.packetizer import OutputFormat
from emostream.text.frontend import SegmentSource
from emostream.text.pron.inline import Problem
from emostream.text.pron.reader import PronunciationSetup
from emostream.voices.base import Controls, Voice, VoiceInfo


@dataclass(frozen=True)
class StartRequest:
    voice: VoiceInfo
    controls: Controls
    fmt: OutputFormat
    timestamps: bool
    stream_id: str
    word_timestamps: bool = False  # asked for, and the voice can time words
    cache: bool = True  # the phrase cache may answer (and keep) this utterance
    # The voice the lookup found, spoken as it is (no second lookup); None where the lookup
    # gives only its info (tests, the schema's checks: nothing speaks there).
    spoken: Voice | None = field(default=None, compare=False, repr=False)
    # Inline overrides and dictionaries, for this voice (docs/protocol.md, "Pronunciation").
    pronunciation: PronunciationSetup = field(default_factory=PronunciationSetup, compare=False,
                                              repr=False)  # fmt: skip
    # Kinds of dictionary entry this voice does not read (left out; the client is told).
    dropped: tuple[str, ...] = ()
    # With ``voices``: the voice of each language (as given or filled in), its info and what
    # speaks (None where the lookup gave only the info); empty: ``voice`` speaks everything.
    languages: tuple[tuple[str, VoiceInfo], ...] = ()
    spoken_languages: tuple[tuple[str, Voice | None], ...] = field(
        default=(), compare=False, repr=False
    )

    @property
    def infos(self) -> tuple[VoiceInfo, ...]:
        """Every voice the utterance may speak with."""
        return (self.voice, *(info for _, info in self.languages))

    def voices_spoken(self) -> dict[str, Voice] | None:
        """The voice of each language to speak with (``{}`` without ``voices``); None where
        a lookup gave only a voice's info."""
        voices = {lang: v for lang, v in self.spoken_languages if v is not None}
        return voices if len(voices) == len(self.spoken_languages) else None

    @property
    def cut_languages(self) -> bool:
        """Two languages have two voices: the text is cut where its language changes."""
        return len({info.id for _, info in self.languages}) > 1


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
