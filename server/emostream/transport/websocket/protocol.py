"""WebSocket protocol v1 for ``/v1/stream`` as a sans-I/O state machine.

Feed it what the client sent (``receive_text`` / ``receive_bytes``); it returns
actions for the I/O layer to carry out. It never touches a socket, a task or a model.

States: ``idle`` (waiting for ``start``) → ``open`` (taking ``text``/``flush``) →
``ending`` (``end`` received, audio still flowing) → ``idle`` once the I/O layer
reports the utterance finished. ``cancel`` returns to ``idle`` at once.
Every bad message yields an :class:`SendError` action and leaves the state as it was.
A ``start`` the I/O layer refused after all (``busy``: admission or the stream limit; its one
answer is that error) leaves ``refused``: the client's ``text``, ``flush``, ``end`` and
``cancel`` for it are dropped without an answer (``end`` and ``cancel`` return to ``idle``),
and a new ``start`` is taken as in ``idle``.

Fields are checked by the validators shared with ``POST /v1/audio/speech``
(:mod:`emostream.transport.messages`); a line's own fields come from the protocol's JSON Schema
(:mod:`emostream.transport.schema`). A ``start``'s voice is looked up once: what the lookup
found rides on its :class:`StartRequest` (``spoken``) to the I/O layer, which speaks it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from emostream.codec.packetizer import FRAME_MS, OutputFormat
from emostream.text.frontend import SegmentSource, TextFrontEnd
from emostream.text.pron.inline import Problem
from emostream.text.pron.lexicon import PronunciationDictionary
from emostream.text.pron.reader import UNSUPPORTED, PronunciationSetup
from emostream.text.splitter import Segmenter
from emostream.transport import schema
from emostream.transport.messages import (
    ProtocolError,
    bool_field,
    integer_field,
    load_message,
    number_field,
    parse_controls,
    parse_format,
    pronunciation_setup,
    voice_field,
)
from emostream.voices.base import Controls, UnsupportedControl, Voice, VoiceInfo, check_controls

NOTHING_SPEAKABLE = "the utterance had no speakable text (voices here read English and Mandarin)"

State = Literal["idle", "open", "ending", "refused"]


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
    | ClearLines
)  # fmt: skip
# From the schema (protocol.schema.json), the one definition of the protocol's fields.
MAX_LINE_ID_CHARS = schema.max_length("line", "id")
MAX_LINE_PRIORITY = schema.int_range("line", "priority")[1]
MIN_LINE_TTL_MS, MAX_LINE_TTL_MS = schema.number_range("line", "ttl_ms")
# How a start's text is cut into segments (docs/protocol.md, "Token streams").
SPLITS = schema.choices("start", "split")
MIN_CHARS_RANGE = schema.int_range("start", "min_chars")
DEFAULT_MIN_CHARS = int(schema.default("start", "min_chars"))
# A line's own fields: the rest (context_id and the start fields) are what it is spoken with.
_LINE_ONLY = tuple(
    k for k in schema.own_fields("line") if k not in ("context_id", "reference_audio")
)
# What a voice lookup finds: the voice to speak, or (where nothing speaks) only its info.
Found = Voice | VoiceInfo


@dataclass
class SessionProtocol:
    """Protocol state for one WebSocket connection (any number of utterances in turn)."""

    # The voice a ``start`` names, if this caller may use it (None: unknown to them).
    lookup_voice: Callable[[str], Found | None]
    default_voice: str = "joe"
    max_text_chars: int = 5000
    line_ttl_ms: float = 8000.0  # a ``line`` with no ``ttl_ms``
    new_stream_id: Callable[[], str] = field(default=lambda: "")
    # Why a known voice cannot speak here (e.g. a clone with no model for it), else None.
    unavailable: Callable[[str], str | None] = field(default=lambda _id: None)
    # The pronunciation dictionary of this id, if this caller may use it (None: unknown to
    # them).
    lookup_dictionary: Callable[[str], PronunciationDictionary | None] = field(
        default=lambda _id: None
    )
    # The Opus encoder's look-ahead (ms) that a v1.1 ``started`` reports as ``codec_delay_ms``.
    opus_delay_ms: float = 6.5
    state: State = "idle"
    _front: TextFrontEnd = field(default_factory=TextFrontEnd)  # this utterance's text
    _request: StartRequest | None = None
    _lines: int = 0  # lines received (server-made ids)

    @property
    def request(self) -> StartRequest | None:
        return self._request

    @property
    def idle(self) -> bool:
        """No utterance in progress: a ``start`` may begin one."""
        return self.state in ("idle", "refused")

    def receive_bytes(self, data: bytes) -> list[Action]:
        return [
            SendError(
                "binary_not_allowed", "send JSON text frames; audio flows server → client only"
            )
        ]

    def receive_text(self, raw: str) -> list[Action]:
        try:
            msg = load_message(raw)
        except ProtocolError as exc:
            return [SendError(exc.code, exc.message)]
        return self.receive_message(msg)

    def receive_message(self, msg: dict[str, Any]) -> list[Action]:
        """A message already parsed by :func:`load_message`."""
        kind = msg.get("type")
        handler = {
            "start": self._on_start,
            "text": self._on_text,
            "flush": self._on_flush,
            "end": self._on_end,
            "cancel": self._on_cancel,
            "line": self._on_line,
            "clear": self._on_clear,
        }.get(kind if isinstance(kind, str) else "")
        if handler is None:
            return [SendError("unknown_type", f"unknown message type {kind!r}; expected "
                              "start, text, flush, end, cancel, line or clear")]  # fmt: skip
        if self.state == "refused" and kind in ("text", "flush", "end", "cancel"):
            if kind in ("end", "cancel"):  # the refused utterance's last message
                self.state = "idle"
            return []  # its one answer was the refusal
        try:
            return handler(msg)
        except ProtocolError as exc:
            return [SendError(exc.code, exc.message)]

    def utterance_finished(self) -> None:
        """The I/O layer reports the utterance's audio is complete (``done`` sent)."""
        self._reset()

    def start_refused(self, request: StartRequest) -> None:
        """The I/O layer refused ``request``'s ``start`` after all (its error sent): the
        client's text, flush, end and cancel for it are dropped quietly (module docs)."""
        if self._request is request:
            self._reset()
            self.state = "refused"

    # -- handlers -----------------------------------------------------------------
    def _on_start(self, msg: dict[str, Any]) -> list[Action]:
        if not self.idle:
            raise ProtocolError(
                "already_started", "an utterance is in progress; send end or cancel first"
            )
        segmenter = segmenter_for(msg)
        request, started = self._build_start(msg, self.new_stream_id())
        return [self._begin(request, started, segmenter), *_dropped(request)]

    def _build_start(
        self, msg: dict[str, Any], stream_id: str
    ) -> tuple[StartRequest, dict[str, Any]]:
        """A validated ``start`` (no state change) and its ``started`` event."""
        voice_id = voice_field(msg, self.default_voice)
        reference = msg.get("reference_audio")
        if reference is not None and (not isinstance(reference, str) or not reference):
            raise ProtocolError("bad_value", "'reference_audio' must be a base64 string")
        found = self.lookup_voice(voice_id)
        if found is None:
            reason = self.unavailable(voice_id)
            if reason:
                raise ProtocolError("voice_unavailable", reason)
            raise ProtocolError(
                "unknown_voice", f"unknown voice {voice_id[:100]!r}; see GET /v1/voices"
            )
        info = found if isinstance(found, VoiceInfo) else found.info
        spoken: Voice | None = None if isinstance(found, VoiceInfo) else found
        controls = parse_controls(msg)
        try:
            check_controls(info, controls)
            if reference is not None and "speaker" not in info.controls:
                raise UnsupportedControl(info.id, {"speaker"})
        except UnsupportedControl as exc:
            raise ProtocolError("unsupported_control", str(exc)) from exc
        fmt = parse_format(msg.get("format"))
        timestamps = bool_field(msg, "timestamps")
        words = bool_field(msg, "word_timestamps")
        cache = bool_field(msg, "cache", True)
        pronunciation, dropped = pronunciation_setup(msg, self.lookup_dictionary).for_voice(
            info.id, info.pronunciation
        )
        request = StartRequest(
            info, controls, fmt, timestamps, stream_id,
            word_timestamps=words and info.word_timestamps, cache=cache, spoken=spoken,
            pronunciation=pronunciation, dropped=tuple(dropped),
        )  # fmt: skip
        started = {
            "type": "started",
            "stream_id": request.stream_id,
            "sample_rate": fmt.sample_rate,
            "codec": fmt.codec,
            "frame_ms": FRAME_MS,
            "voice": info.id,
            "controls": info.controls_report(),
        }
        if words:  # asked: say whether this voice gives them
            started["word_timestamps"] = info.word_timestamps
        if msg.get("pronunciation") is not None or msg.get("pronunciation_dictionaries"):
            started["pronunciation"] = list(info.pronunciation)  # asked: what it reads
        return request, started

    def _begin(self, request: StartRequest, started: dict[str, Any],
               segmenter: Segmenter | None = None) -> BeginUtterance:  # fmt: skip
        """``segmenter``: the start's (:func:`segmenter_for`); a line's text comes whole, and
        is cut only at punctuation."""
        self._reset()
        self._request = request
        self._front = TextFrontEnd(locate=request.word_timestamps, segmenter=segmenter,
                                   pronunciation=request.pronunciation)  # fmt: skip
        self.state = "open"
        return BeginUtterance(request, started)

    # -- lines (danmaku queue) ----------------------------------------------------------
    def _on_line(self, msg: dict[str, Any]) -> list[Action]:
        text = msg.get("text")
        if not isinstance(text, str) or not text.strip():
            raise ProtocolError("bad_value", "'text' must be a non-empty string")
        if len(text) > self.max_text_chars:
            raise ProtocolError(
                "text_too_long", f"a line is at most {self.max_text_chars} characters"
            )
        line_id = msg.get("id")
        if line_id is None:
            self._lines += 1
            line_id = f"line_{self._lines}"
        elif not isinstance(line_id, str) or not line_id or len(line_id) > MAX_LINE_ID_CHARS:
            raise ProtocolError(
                "bad_value", f"'id' must be a non-empty string of at most {MAX_LINE_ID_CHARS} "
                "characters",
            )  # fmt: skip
        priority = integer_field(msg, "priority", 0, code="bad_value", name="priority")
        if abs(priority) > MAX_LINE_PRIORITY:
            raise ProtocolError(
                "bad_value",
                f"'priority' must be from {-MAX_LINE_PRIORITY} to {MAX_LINE_PRIORITY}",
            )
        ttl_ms = number_field(msg, "ttl_ms", self.line_ttl_ms, MIN_LINE_TTL_MS, MAX_LINE_TTL_MS)
        if msg.get("reference_audio") is not None:
            raise ProtocolError(
                "bad_value", "'reference_audio' is not taken in a line (use a cloned voice id)"
            )
        fields = {k: v for k, v in msg.items() if k not in _LINE_ONLY}
        self._build_start(fields, "")  # checked now; spoken later with these fields
        return [EnqueueLine(line_id, text, priority, ttl_ms / 1000.0, fields)]

    def _on_clear(self, msg: dict[str, Any]) -> list[Action]:
        return [ClearLines()]

    def start_line(
        self, line_id: str, text: str, fields: dict[str, Any], speed_factor: float = 1.0
    ) -> list[Action]:
        """Begin a queued line as a whole utterance (start, its text, end) when idle.

        Its speed is the line's own times ``speed_factor`` (at most 2), for voices that take
        ``speed``; ``started`` carries the line's ``id`` and that ``speed``. The protocol is
        left ``ending``: a client ``text`` meanwhile gets ``already_ended``."""
        if not self.idle:
            return [SendError("already_started", "an utterance is in progress")]
        try:
            request, started = self._build_start(fields, self.new_stream_id())
        except ProtocolError as exc:  # e.g. the voice was deleted while the line waited
            return [SendError(exc.code, exc.message)]
        speed = request.controls.speed
        if "speed" in request.voice.controls and speed_factor != 1.0:
            speed = round(min(2.0, speed * speed_factor), 3)
            request = replace(request, controls=replace(request.controls, speed=speed))
        started = {**started, "id": line_id, "speed": speed}
        actions: list[Action] = [self._begin(request, started), *_dropped(request)]
        try:
            actions += self._on_text({"text": text})
        except ProtocolError as exc:
            actions.append(SendError(exc.code, exc.message))
        actions += self._on_end({})
        return actions

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
        raw = text
        text = self._front.normalize(text)
        if self._front.chars + len(text) > self.max_text_chars:
            raise ProtocolError(
                "text_too_long",
                f"utterance text over {self.max_text_chars} characters; this message was not "
                "spoken (send end and start a new utterance)",
            )
        segments = self._front.feed(raw, text)
        return self._problems() + ([self._queue(segments)] if segments else [])

    def _problems(self) -> list[Action]:
        """An error per override the front end did not apply (its word is read as written)."""
        return [OverrideError.of(p) for p in self._front.take_problems()]

    def _queue(self, segments: list[str]) -> QueueSegments:
        if not self._front.locating:
            return QueueSegments(segments)
        return QueueSegments(segments, tuple(self._front.locate(s) for s in segments))

    def _on_flush(self, msg: dict[str, Any]) -> list[Action]:
        self._require_open("flush")
        segments = self._front.flush(final=False)  # an override still open stays held
        return self._problems() + ([self._queue(segments)] if segments else [])

    def _on_end(self, msg: dict[str, Any]) -> list[Action]:
        self._require_open("end")
        segments = self._front.flush()
        actions: list[Action] = self._problems()
        if segments:
            actions.append(self._queue(segments))
        if self._front.emitted == 0:
            actions.append(SendError("empty_text", NOTHING_SPEAKABLE))
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
        self._front = TextFrontEnd()
        self._request = None


def _dropped(request: StartRequest) -> list[Action]:
    """The start's dictionaries hold entries of kinds its voice does not read: say so."""
    if not request.dropped:
        return []
    kinds = " or ".join(request.dropped)
    return [SendError(UNSUPPORTED, f"voice {request.voice.id!r} does not take {kinds} "
                      "pronunciations: those entries of the dictionaries are not applied")]


def segmenter_for(msg: dict[str, Any]) -> Segmenter:
    """The segmenter a ``start`` asks for: ``split`` ``words`` (the default: a segment may end
    between two words, the first once it has ``min_chars``) or ``punctuation`` (only at
    punctuation marks, the first at a clause mark after ``min_chars``)."""
    split = msg.get("split")
    if split is not None and split not in SPLITS:
        raise ProtocolError("bad_value", f"'split' must be {' or '.join(map(repr, SPLITS))}")
    lo, hi = MIN_CHARS_RANGE
    min_chars = integer_field(msg, "min_chars", DEFAULT_MIN_CHARS, code="bad_value",
                              name="min_chars")  # fmt: skip
    if not lo <= min_chars <= hi:
        raise ProtocolError("bad_value", f"'min_chars' must be from {lo} to {hi}")
    return Segmenter(first_min_chars=min_chars, words=split in (None, "words"))
