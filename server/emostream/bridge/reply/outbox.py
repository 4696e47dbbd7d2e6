"""The reply step's ledger (sans-I/O): chat lines in, a chat model's streamed replies out as
``start`` + ``text`` pieces + ``end`` on the bridge's socket, one reply at a time.

It has the :class:`~emostream.bridge.lines.Outbox`'s interface (the bridge's socket layer
drives either) plus the reply's own calls:

* :meth:`ReplyOutbox.next_ask`: the next line to answer (highest priority, then oldest),
  once no reply is in progress; the asyncio layer streams the chat model's reply into
  :meth:`piece`, then :meth:`finished` or :meth:`failed`.
* The reply's leading tag (:class:`~emostream.bridge.reply.tags.TagReader`) sets the
  ``start``'s ``emotion``; the ``start`` goes as soon as it is known (with ``limit`` allowing:
  the bridge's pacing), and the words follow as they come. Until a ``started`` has said
  whether the voice takes ``emotion``, the words wait for it; a voice that does not is sent
  the reply again without it (a warning, once) rather than losing it.
* A ``start`` refused as ``busy`` is sent again after ``retry_after_ms``, with every word so
  far; so is one cut by a reconnect before any audio (after some, it is ``interrupted``).

Events it gives (besides ``line_dropped``): ``{"type":"reply","event":"spoken",…}`` with the
reply's emotion, its text and its timings (``first_token_ms``: the model's first piece after
the ask; ``first_audio_ms``: first audio after that piece), ``"event":"warning"`` for an
unknown tag or a voice without emotion, ``"event":"failed"`` for an endpoint that failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from emostream.bridge.lines import ChatLine, Tally
from emostream.bridge.reply.tags import TagReader
from emostream.voices.stock_voices import language_of

State = Literal["asking", "starting", "open", "ended"]
MAX_REPLY_LOG_CHARS = 500


@dataclass
class ReplyJob:
    line: ChatLine
    received_at: float
    asked_at: float
    reader: TagReader = field(default_factory=TagReader)
    state: State = "asking"
    pending: list[str] = field(default_factory=list)  # words not yet sent
    sent: list[str] = field(default_factory=list)  # words sent for this start
    llm_done: bool = False
    started: bool = False  # the server's ``started`` came for this start
    empty: bool = False  # the server said there was nothing to speak
    failed: bool = False  # the endpoint failed before the reply was complete
    not_before: float = 0.0
    audio_bytes: int = 0
    first_piece_at: float | None = None
    first_text_at: float | None = None
    first_audio_at: float | None = None

    @property
    def text(self) -> str:
        return "".join(self.sent) + "".join(self.pending)


class ReplyOutbox:
    def __init__(
        self,
        *,
        fields: dict[str, Any] | None = None,
        max_held: int = 64,
        language_voices: Mapping[str, str] | None = None,
    ) -> None:
        if max_held < 1:
            raise ValueError("max_held must be >= 1")
        self.fields = dict(fields or {})
        self.language_voices = dict(language_voices or {})
        self.max_held = max_held
        self.tally = Tally()
        self.emotion_ok: bool | None = None  # the voice takes emotion (None: not known yet)
        self.job: ReplyJob | None = None
        self._held: dict[str, tuple[ChatLine, float]] = {}
        self._warned_voice = False

    # -- the Outbox interface ----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._held) + (self.job is not None)

    @property
    def drained(self) -> bool:
        return not self._held and self.job is None

    @property
    def at_server(self) -> int:
        return int(self.job is not None and self.job.state != "asking")

    def add(self, line: ChatLine, now: float) -> list[dict[str, Any]]:
        if line.id in self._held or (self.job is not None and self.job.line.id == line.id):
            self.tally.input_errors += 1
            return [{"type": "input_error", "id": line.id,
                     "message": f"id {line.id!r} is already waiting; line skipped"}]  # fmt: skip
        self.tally.received += 1
        self._held[line.id] = (line, now)
        if len(self._held) <= self.max_held:
            return []
        victim = min(self._held.values(), key=lambda h: (h[0].priority, h[1]))
        return [self._drop(victim[0], victim[1], "overflow", now)]

    def expire_held(self, now: float) -> list[dict[str, Any]]:
        gone = [(ln, t) for ln, t in self._held.values() if ln.ttl_ms - 1000 * (now - t) <= 0]
        return [self._drop(ln, t, "expired", now) for ln, t in gone]

    def give_up(self, now: float) -> list[dict[str, Any]]:
        return []  # a stalled endpoint is timed out by the asyncio layer (failed)

    def to_send(
        self, now: float, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        events = self.expire_held(now)
        job = self.job
        messages: list[dict[str, Any]] = []
        if job is None:
            return messages, events
        if job.state == "asking" and job.reader.decided and limit != 0 and now >= job.not_before:
            messages.append(self._start(job))
            job.state = "open" if self.emotion_ok is not None else "starting"
        if job.state == "open" and job.pending:
            text = "".join(job.pending)
            job.sent.append(text)
            job.pending = []
            messages.append({"type": "text", "text": text})
        if job.state == "open" and job.llm_done and not job.pending:
            messages.append({"type": "end"})
            job.state = "ended"
        return messages, events

    def disconnected(self, now: float) -> list[dict[str, Any]]:
        job = self.job
        if job is None or job.state == "asking":
            return []
        if job.audio_bytes > 0:
            self.job = None
            self.tally.interrupted += 1
            return [{"type": "line_interrupted", "id": job.line.id,
                     "audio_bytes": job.audio_bytes}]  # fmt: skip
        self._again(job, now)
        return []

    def on_audio(self, nbytes: int, now: float | None = None) -> str | None:
        job = self.job
        if job is None or not job.started:
            return None
        job.audio_bytes += nbytes
        if job.first_audio_at is None and now is not None:
            job.first_audio_at = now
        return job.line.id

    def on_event(self, event: dict[str, Any], now: float) -> list[dict[str, Any]]:
        job = self.job
        kind = event.get("type")
        if job is None or job.state == "asking":
            return []
        if kind == "started":
            job.started = True
            controls = event.get("controls")
            if isinstance(controls, dict):
                self.emotion_ok = bool(controls.get("emotion"))
            if job.state == "starting":
                job.state = "open"
            return []
        if kind == "done" and job.started:
            return self._settle(job, cancelled=bool(event.get("cancelled")))
        if kind == "error":
            return self._error(job, event, now)
        return []

    # -- the reply's own calls -------------------------------------------------------------
    def next_ask(self, now: float) -> ReplyJob | None:
        """The next line to answer, when none is being answered (it leaves the queue)."""
        if self.job is not None or not self._held:
            return None
        line, t = min(self._held.values(), key=lambda h: (-h[0].priority, h[1]))
        del self._held[line.id]
        self.job = ReplyJob(line, t, now)
        return self.job

    def piece(self, job: ReplyJob, text: str, now: float) -> tuple[bool, list[dict[str, Any]]]:
        """A piece of ``job``'s reply; False when the job is over (stop streaming it)."""
        if job is not self.job or job.llm_done:
            return False, []
        if job.first_piece_at is None:
            job.first_piece_at = now
        was_decided = job.reader.decided
        spoken = job.reader.feed(text)
        events = self._tag_events(job) if job.reader.decided and not was_decided else []
        self._words(job, spoken, now)
        return True, events

    def finished(self, job: ReplyJob, now: float) -> list[dict[str, Any]]:
        """The chat model's reply is complete."""
        if job is not self.job or job.llm_done:
            return []
        was_decided = job.reader.decided
        self._words(job, job.reader.finish(), now)
        events = self._tag_events(job) if job.reader.decided and not was_decided else []
        job.llm_done = True
        if job.state == "asking" and not job.text.strip():
            self.job = None
            return [*events, self._drop(job.line, job.received_at, "empty_reply", now)]
        return events

    def failed(self, job: ReplyJob, reason: str, now: float) -> list[dict[str, Any]]:
        """The endpoint failed: a reply not yet begun is dropped; one begun ends there."""
        if job is not self.job or job.llm_done:
            return []
        event = {"type": "reply", "event": "failed", "id": job.line.id, "message": reason[:300]}
        if job.state == "asking" and not job.text.strip():
            self.job = None
            return [event, self._drop(job.line, job.received_at, "reply_failed", now)]
        job.reader.finish()
        job.llm_done = job.failed = True
        if not job.reader.decided:
            job.reader.emotion = "neutral"
        return [event]

    # -- helpers ---------------------------------------------------------------------------
    def _start(self, job: ReplyJob) -> dict[str, Any]:
        """The reply's ``start``: the bridge's fields (a room, a voice per language: the
        reply goes where the bridge's lines go), with the tag's emotion (neutral: the bridge's
        own, if it has one); none at all for a voice that does not take it. With no voice named,
        the voice of the asked line's language (``language_voices``)."""
        msg = {**self.fields, "type": "start"}
        voice = self.language_voices.get(language_of(job.line.text))
        if voice is not None and "voice" not in msg and "voices" not in msg:
            msg["voice"] = voice  # the reply in the language of the line it answers
        if job.reader.emotion not in (None, "neutral"):
            msg["emotion"] = job.reader.emotion
        if self.emotion_ok is False:
            msg.pop("emotion", None)
        return msg

    def _words(self, job: ReplyJob, spoken: str, now: float) -> None:
        if not job.text:
            spoken = spoken.lstrip()
        if spoken:
            if job.first_text_at is None:
                job.first_text_at = now
            job.pending.append(spoken)

    def _tag_events(self, job: ReplyJob) -> list[dict[str, Any]]:
        reader = job.reader
        if reader.unknown is not None:
            return [{"type": "reply", "event": "warning", "id": job.line.id,
                     "tag": reader.unknown[:40],
                     "message": f"the reply's tag [{reader.unknown[:40]}] names no emotion; "
                                "spoken as neutral"}]  # fmt: skip
        return []

    def _again(self, job: ReplyJob, now: float, delay_s: float = 0.0) -> None:
        """Send this reply's start again (all its words so far with it)."""
        job.state, job.started, job.empty = "asking", False, False
        job.pending = job.sent + job.pending
        job.sent = []
        job.not_before = now + delay_s

    def _error(self, job: ReplyJob, event: dict[str, Any], now: float) -> list[dict[str, Any]]:
        code = str(event.get("code"))
        if code == "empty_text":
            job.empty = True
            return []
        if job.started:
            return []  # about a piece of text (the server's error is in the log already)
        if code == "unsupported_control" and "emotion" in str(event.get("message", "")):
            self.emotion_ok = False
            self._again(job, now)
            if self._warned_voice:
                return []
            self._warned_voice = True
            return [{"type": "reply", "event": "warning", "id": job.line.id,
                     "message": "the voice does not take emotion; replies are spoken "
                                "without their tags' emotion"}]  # fmt: skip
        if code == "busy":
            retry = event.get("retry_after_ms")
            delay = float(retry) / 1000.0 if isinstance(retry, int | float) else 0.5
            self._again(job, now, min(10.0, max(0.05, delay)))
            return [{"type": "line_held", "id": job.line.id,
                     "message": f"the server was busy; started again in {delay:.2f} s"}]  # fmt: skip
        self.job = None
        self.tally.refused[code] += 1
        return []

    def _settle(self, job: ReplyJob, *, cancelled: bool) -> list[dict[str, Any]]:
        self.job = None
        if job.empty and job.audio_bytes == 0:
            reason = "reply_failed" if job.failed else "empty_reply"
            self.tally.dropped[reason] += 1
            return [{"type": "line_dropped", "id": job.line.id, "reason": reason,
                     "where": "bridge", "priority": job.line.priority}]  # fmt: skip
        if cancelled:
            self.tally.interrupted += 1
            return []
        self.tally.spoken += 1
        out: dict[str, Any] = {
            "type": "reply", "event": "spoken", "id": job.line.id,
            "emotion": job.reader.emotion or "neutral",
            "text": job.text[:MAX_REPLY_LOG_CHARS],
        }  # fmt: skip
        if job.first_piece_at is not None:
            out["first_token_ms"] = round(1000.0 * (job.first_piece_at - job.asked_at), 1)
            if job.first_audio_at is not None:
                out["first_audio_ms"] = round(1000.0 * (job.first_audio_at - job.first_piece_at),
                                              1)  # fmt: skip
        if job.first_text_at is not None and job.first_audio_at is not None:
            out["first_audio_after_words_ms"] = round(
                1000.0 * (job.first_audio_at - job.first_text_at), 1
            )
        return [out]

    def _drop(self, line: ChatLine, received_at: float, reason: str, now: float) -> dict[str, Any]:
        self._held.pop(line.id, None)
        self.tally.dropped[reason] += 1
        return {
            "type": "line_dropped", "id": line.id, "reason": reason, "where": "bridge",
            "priority": line.priority, "waited_ms": round(1000.0 * (now - received_at), 1),
        }  # fmt: skip
