"""WebSocket protocol v1 for ``/v1/stream`` as a sans-I/O state machine.

Feed it what the client sent (``receive_text`` / ``receive_bytes``); it returns
actions for the I/O layer to carry out. It never touches a socket, a task or a model.

States: ``idle`` (waiting for ``start``) → ``open`` (taking ``text``/``flush``) →
``ending`` (``end`` received, audio still flowing) → ``idle`` once the I/O layer
reports the utterance finished. ``cancel`` returns to ``idle`` at once.
Every bad message yields an :class:`SendError` action and leaves the state as it was.
A ``start`` the I/O layer refused after all (``busy``: admission or the stream limit; its one
answer is that error) leaves ``refused``: the client's ``text``, ``flush``, ``end`` and
``cancel`` for it are dropped without an answer (a :class:`Dropped` action, which the I/O layer
only counts; ``end`` and ``cancel`` return to ``idle``), and a new ``start`` is taken as in
``idle``.

Fields are checked by the validators shared with ``POST /v1/audio/speech``
(:mod:`emostream.transport.messages`); a line's own fields come from the protocol's JSON Schema
(:mod:`emostream.transport.schema`). A ``start``'s voice is looked up once: what the lookup
found rides on its :class:`~.start_request.StartRequest` (``spoken``) to the I/O layer, which speaks it. With
``voices`` (a voice per language) each is looked up, the languages it leaves out are filled in
(:func:`emostream.voices.per_language.resolve`), and the utterance's text is cut where its
language changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from emostream.codec.packetizer import FRAME_MS
from emostream.text.frontend import TextFrontEnd
from emostream.text.pron.lexicon import PronunciationDictionary
from emostream.text.pron.reader import UNSUPPORTED, shared_kinds
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
    voices_field,
)
from emostream.transport.websocket.actions import (
    Action,
    BeginUtterance,
    CancelUtterance,
    ClearLines,
    Dropped,
    EndOfInput,
    EnqueueLine,
    OverrideError,
    QueueSegments,
    SendError,
)
from emostream.transport.websocket.start_request import StartRequest
from emostream.voices.base import ALL_CONTROLS, UnsupportedControl, Voice, VoiceInfo, check_controls
from emostream.voices.per_language import LanguageMismatch, resolve

# The actions and the start request live in emostream.transport.websocket.actions; importers
# of this module find them here too.
__all__ = [
    "MAX_LINE_ID_CHARS",
    "NOTHING_SPEAKABLE",
    "Action",
    "BeginUtterance",
    "CancelUtterance",
    "ClearLines",
    "Dropped",
    "EndOfInput",
    "EnqueueLine",
    "OverrideError",
    "QueueSegments",
    "SendError",
    "SessionProtocol",
    "StartRequest",
    "segmenter_for",
]

NOTHING_SPEAKABLE = "the utterance had no speakable text (voices here read English and Mandarin)"

State = Literal["idle", "open", "ending", "refused"]

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
ROOM_NAME = re.compile(schema.definition("room_name")["pattern"])
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
    # The stock voice of a language nearest in timbre to a voice (``voices``: a language left
    # out), or None.
    match_voice: Callable[[Voice, str], Voice | None] = field(default=lambda _v, _l: None)
    # The answer to a voice not found (short, with the closest names: voice_access).
    unknown: Callable[[str], str] = field(
        default=lambda v: f"unknown voice {v[:100]!r}; see GET /v1/voices"
    )
    # The Opus encoder's look-ahead (ms) that a v1.1 ``started`` reports as ``codec_delay_ms``.
    opus_delay_ms: float = 6.5
    # Why this caller may not publish into a room (no such room of theirs), else None.
    room_access: Callable[[str], str | None] = field(default=lambda _name: None)
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
            return [Dropped(kind)]  # its one answer was the refusal
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
        explicit = msg.get("voice") is not None
        voice_id = voice_field(msg, self.default_voice)
        asked_ids = voices_field(msg)
        reference = msg.get("reference_audio")
        if reference is not None and (not isinstance(reference, str) or not reference):
            raise ProtocolError("bad_value", "'reference_audio' must be a base64 string")
        found = self._find(voice_id)
        asked = {lang: self._find(vid, lang) for lang, vid in asked_ids.items()}
        controls = parse_controls(msg)
        fmt = parse_format(msg.get("format"))
        timestamps = bool_field(msg, "timestamps")
        words = bool_field(msg, "word_timestamps")
        cache = bool_field(msg, "cache", True)
        mouth = bool_field(msg, "mouth")
        room = self._room(msg)
        languages: dict[str, Found] = {}
        if asked:  # (after the message's own fields: a bad field is told first)
            try:
                languages = resolve(asked, voice=found, explicit=explicit, info=_info,
                                    match=self._match)  # fmt: skip
            except LanguageMismatch as exc:
                raise ProtocolError("unsupported_language", str(exc)) from exc
            if not explicit:  # the voice given first stands for the utterance
                found = next(iter(asked.values()))
        info = _info(found)
        spoken: Voice | None = None if isinstance(found, VoiceInfo) else found
        infos = {info.id: info, **{_info(v).id: _info(v) for v in languages.values()}}
        try:
            for each in infos.values():
                check_controls(each, controls)
            if reference is not None and "speaker" not in info.controls:
                raise UnsupportedControl(info.id, {"speaker"})
        except UnsupportedControl as exc:
            raise ProtocolError("unsupported_control", str(exc)) from exc
        if len({each.sample_rate for each in infos.values()}) > 1:
            raise ProtocolError(
                "bad_value", "'voices': the voices of one utterance must share a sample rate "
                f"({', '.join(f'{i.id} {i.sample_rate} Hz' for i in infos.values())})",
                "voices",
            )  # fmt: skip
        timed = all(each.word_timestamps for each in infos.values())
        # Overrides of the kinds every voice that speaks reads (with ``voices``, theirs).
        speakers = [_info(v) for v in languages.values()] or [info]
        speaker, kinds = shared_kinds((i.id, i.pronunciation) for i in speakers)
        pronunciation, dropped = pronunciation_setup(msg, self.lookup_dictionary).for_voice(
            speaker, kinds
        )
        request = StartRequest(
            info, controls, fmt, timestamps, stream_id,
            word_timestamps=words and timed, cache=cache, spoken=spoken,
            mouth=mouth, room=room, room_words=room is not None and timed,
            pronunciation=pronunciation, dropped=tuple(dropped),
            languages=tuple((lang, _info(v)) for lang, v in languages.items()),
            spoken_languages=tuple(
                (lang, None if isinstance(v, VoiceInfo) else v) for lang, v in languages.items()
            ),
        )  # fmt: skip
        # Controls every voice of the utterance takes (one voice: its own report).
        report = {name: all(name in i.controls for i in infos.values()) for name in ALL_CONTROLS}
        started = {
            "type": "started",
            "stream_id": request.stream_id,
            "sample_rate": fmt.sample_rate,
            "codec": fmt.codec,
            "frame_ms": FRAME_MS,
            "voice": info.id,
            "controls": report,
        }
        if languages:
            started["voices"] = {lang: each.id for lang, each in request.languages}
        if words:  # asked: say whether this voice gives them
            started["word_timestamps"] = timed
        if room is not None:
            started["room"] = room
        if msg.get("pronunciation") is not None or msg.get("pronunciation_dictionaries"):
            started["pronunciation"] = list(kinds)  # asked: what its voices read
        return request, started

    def _room(self, msg: dict[str, Any]) -> str | None:
        """``room``: a well-formed name of a room this caller may publish into, or None."""
        room = msg.get("room")
        if room is None:
            return None
        if not isinstance(room, str) or not ROOM_NAME.fullmatch(room):
            raise ProtocolError(
                "bad_value", "'room' must be 1-64 characters of A-Z a-z 0-9 . _ : -", "room"
            )
        refused = self.room_access(room)
        if refused is not None:
            raise ProtocolError("unknown_room", refused, "room")
        return room

    def _match(self, voice: Found, language: str) -> Found | None:
        return None if isinstance(voice, VoiceInfo) else self.match_voice(voice, language)

    def _find(self, voice_id: str, language: str | None = None) -> Found:
        """The voice ``voice_id`` names (``language``: given for it in ``voices``), or
        ``unknown_voice`` / ``voice_unavailable``."""
        found = self.lookup_voice(voice_id)
        if found is not None:
            return found
        where = "" if language is None else f" (voices.{language})"
        reason = self.unavailable(voice_id)
        if reason:
            raise ProtocolError("voice_unavailable", reason + where)
        lead = "" if language is None else f"voices.{language}: "
        raise ProtocolError("unknown_voice", lead + self.unknown(voice_id))

    def _begin(self, request: StartRequest, started: dict[str, Any],
               segmenter: Segmenter | None = None) -> BeginUtterance:  # fmt: skip
        """``segmenter``: the start's (:func:`segmenter_for`); a line's text comes whole, and
        is cut only at punctuation."""
        self._reset()
        self._request = request
        locate = request.word_timestamps or request.room_words
        self._front = TextFrontEnd(locate=locate, segmenter=segmenter,
                                   languages=request.cut_languages,
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
        takes_speed = all("speed" in info.controls for info in request.infos)
        if takes_speed and speed_factor != 1.0:
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
    """The start's dictionaries hold entries of kinds its voices do not read: say so."""
    if not request.dropped:
        return []
    kinds = " or ".join(request.dropped)
    return [SendError(UNSUPPORTED, f"voice {request.pronunciation.voice!r} does not take "
                      f"{kinds} pronunciations: those entries of the dictionaries are not "
                      "applied")]  # fmt: skip


def _info(found: Found) -> VoiceInfo:
    return found if isinstance(found, VoiceInfo) else found.info


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
