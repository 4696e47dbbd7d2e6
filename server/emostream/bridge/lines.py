"""The danmaku bridge's core (sans-I/O): chat lines in, ``line`` messages out, and the ledger
of every line until the server has said what became of it.

Nothing here reads, sends, sleeps or looks at a clock: every call that needs the time takes
``now`` (seconds, any monotonic clock), and the asyncio layer (:mod:`emostream.bridge.danmaku`)
moves the bytes.

* :class:`LineParser`: one input line (JSON object or plain text) → a :class:`ChatLine`, or an
  :class:`InputError` saying what is wrong with it (the line is skipped, the bridge goes on).
* :class:`Outbox`: every line the bridge holds, from input until the server reports it spoken
  (``started`` … ``done``), dropped (``line_dropped``) or refused (``error`` with its ``id``).
  Lines not yet started are sent again after a reconnect, with what is left of their TTL
  (counted from when the bridge read them); a line past its TTL is dropped here
  (``where: "bridge"``). A line whose fate the server never reports (``error`` without an
  ``id``, e.g. a refused ``line``) is given up ``grace_s`` after its TTL as ``unconfirmed``.
* :class:`Playout`: the listener's clock (audio received plays in real time), for pacing:
  with a lead set, the bridge sends the next line only when nothing is at the server and
  less than the lead of received audio is still to be heard, so lines wait (and expire) in
  the bridge rather than in the listener's buffer (the server speaks faster than real time).
* :class:`Backoff`: reconnect delays, doubling with jitter, reset once a connection works.
"""

from __future__ import annotations

import json
import random
import string
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from emostream.voices.stock_voices import language_of

# The server's limits on a line (transport.websocket.protocol); checked here too, so that a
# line the server would refuse (whose error carries no id) is reported against its input line.
MAX_ID_CHARS = 128
MAX_PRIORITY = 1000
MAX_TTL_MS = 600_000.0
INPUT_KEYS = ("text", "priority", "ttl_ms", "id", "user")


@dataclass(frozen=True)
class ChatLine:
    id: str
    text: str  # as it will be spoken (the template applied)
    priority: int = 0
    ttl_ms: float = 8000.0
    user: str | None = None


@dataclass(frozen=True)
class InputError:
    line_no: int
    message: str

    @property
    def event(self) -> dict[str, Any]:
        return {"type": "input_error", "line": self.line_no, "message": self.message}


class BadInput(Exception):
    """What is wrong with an input line (becomes an :class:`InputError`)."""


def _template_fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


class LineParser:
    """Input lines → :class:`ChatLine`.

    A line that starts with ``{`` is a JSON object with ``text`` (required) and optionally
    ``priority`` (whole number, −1000…1000), ``ttl_ms`` (1…600000), ``id`` (string, at most
    128 characters; default ``<id_prefix><n>``) and ``user``; other keys are ignored. Any other
    non-blank line is its own text. Blank lines are skipped silently.

    ``template`` (fields ``{text}`` and ``{user}``) makes the spoken text from a line that has
    a ``user``; a line without one is spoken as its text."""

    def __init__(
        self,
        *,
        ttl_ms: float = 8000.0,
        max_chars: int = 500,
        template: str = "{text}",
        id_prefix: str = "b",
    ) -> None:
        unknown = _template_fields(template) - {"text", "user"}
        if unknown or "text" not in _template_fields(template):
            raise ValueError("the template takes {text} and {user} only, and needs {text}")
        if not 1.0 <= ttl_ms <= MAX_TTL_MS:
            raise ValueError(f"ttl_ms must be from 1 to {MAX_TTL_MS:g}")
        self.ttl_ms = ttl_ms
        self.max_chars = max_chars
        self.template = template
        self.id_prefix = id_prefix
        self.line_no = 0  # input lines read (blank ones included)
        self._made_ids = 0

    def parse(self, raw: str) -> ChatLine | InputError | None:
        self.line_no += 1
        stripped = raw.strip()
        if not stripped:
            return None
        try:
            line = self._parse(stripped)
        except BadInput as exc:
            return InputError(self.line_no, str(exc))
        return line

    def _parse(self, stripped: str) -> ChatLine:
        if not stripped.startswith("{"):
            return self._line({"text": stripped})
        try:
            obj = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise BadInput(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise BadInput("a JSON line must be an object")
        return self._line(obj)

    def _line(self, obj: dict[str, Any]) -> ChatLine:
        text = obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise BadInput("'text' must be a non-empty string")
        user = obj.get("user")
        if user is not None and not isinstance(user, str):
            raise BadInput("'user' must be a string")
        priority = obj.get("priority", 0)
        if isinstance(priority, bool) or not isinstance(priority, int | float):
            raise BadInput("'priority' must be a whole number")
        if priority != int(priority) or abs(priority) > MAX_PRIORITY:
            raise BadInput(f"'priority' must be a whole number from -{MAX_PRIORITY} to "
                             f"{MAX_PRIORITY}")  # fmt: skip
        ttl_ms = obj.get("ttl_ms", self.ttl_ms)
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int | float):
            raise BadInput("'ttl_ms' must be a number")
        if not 1.0 <= ttl_ms <= MAX_TTL_MS:
            raise BadInput(f"'ttl_ms' must be from 1 to {MAX_TTL_MS:g}")
        line_id = obj.get("id")
        if line_id is None:
            self._made_ids += 1
            line_id = f"{self.id_prefix}{self._made_ids}"
        elif not isinstance(line_id, str) or not line_id or len(line_id) > MAX_ID_CHARS:
            raise BadInput(f"'id' must be a non-empty string of at most {MAX_ID_CHARS} "
                             "characters")  # fmt: skip
        spoken = text.strip()
        if user and user.strip():
            spoken = self.template.format(text=spoken, user=user.strip())
        if len(spoken) > self.max_chars:
            raise BadInput(f"the line is {len(spoken)} characters; at most {self.max_chars}")
        return ChatLine(line_id, spoken, int(priority), float(ttl_ms), user)


State = Literal["held", "sent", "speaking"]


@dataclass
class Entry:
    line: ChatLine
    received_at: float
    state: State = "held"
    sent_at: float | None = None
    not_before: float = 0.0  # held: not sent again before this (after ``busy``)
    audio_bytes: int = 0

    def ttl_left_ms(self, now: float) -> float:
        return self.line.ttl_ms - 1000.0 * (now - self.received_at)


@dataclass
class Tally:
    received: int = 0
    spoken: int = 0
    interrupted: int = 0  # the connection went while it was speaking (not sent again)
    dropped: Counter[str] = field(default_factory=Counter)  # by reason (server and bridge)
    refused: Counter[str] = field(default_factory=Counter)  # by the server's error code
    unconfirmed: int = 0  # the server never said (given up grace_s past the TTL)
    input_errors: int = 0

    @property
    def settled(self) -> int:
        return (self.spoken + self.interrupted + sum(self.dropped.values())
                + sum(self.refused.values()) + self.unconfirmed)  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "received": self.received, "spoken": self.spoken, "interrupted": self.interrupted,
            "dropped": dict(sorted(self.dropped.items())),
            "refused": dict(sorted(self.refused.items())),
            "unconfirmed": self.unconfirmed, "input_errors": self.input_errors,
        }  # fmt: skip


class Outbox:
    """The lines the bridge holds and what the server said about each.

    ``fields``: the ``start`` fields every ``line`` carries (voice, controls, format).
    ``language_voices``: the voice of a line in that language (``en``, ``zh``:
    :func:`~emostream.voices.stock_voices.language_of`) when ``fields`` name none.
    ``max_held``: lines held unsent (while disconnected) at most; past it the lowest priority,
    oldest one is dropped (``overflow``, ``where: "bridge"``). ``retry_busy_s``: a line the
    server refused as ``busy`` is sent again after this, while its TTL lasts."""

    def __init__(
        self,
        *,
        fields: dict[str, Any] | None = None,
        language_voices: Mapping[str, str] | None = None,
        max_held: int = 256,
        grace_s: float = 5.0,
        retry_busy_s: float = 0.5,
    ) -> None:
        if max_held < 1:
            raise ValueError("max_held must be >= 1")
        self.fields = dict(fields or {})
        self.language_voices = dict(language_voices or {})
        self.max_held = max_held
        self.grace_s = grace_s
        self.retry_busy_s = retry_busy_s
        self.tally = Tally()
        self._open: dict[str, Entry] = {}  # by id, in arrival order
        self._speaking: str | None = None
        self._cleared_by_us = False

    # -- state ---------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._open)

    @property
    def drained(self) -> bool:
        """Nothing held, waiting at the server or speaking."""
        return not self._open

    @property
    def speaking(self) -> str | None:
        """The id of the line whose audio is arriving now."""
        return self._speaking

    def entry(self, line_id: str) -> Entry | None:
        return self._open.get(line_id)

    # -- input ---------------------------------------------------------------------------
    def add(self, line: ChatLine, now: float) -> list[dict[str, Any]]:
        """Hold ``line`` until it can be sent; returns events (a refused duplicate id, a
        bridge-side overflow)."""
        if line.id in self._open:
            self.tally.input_errors += 1
            return [{"type": "input_error", "id": line.id,
                     "message": f"id {line.id!r} is already waiting; line skipped"}]  # fmt: skip
        self.tally.received += 1
        self._open[line.id] = Entry(line, now)
        held = [e for e in self._open.values() if e.state == "held"]
        if len(held) <= self.max_held:
            return []
        victim = min(held, key=lambda e: (e.line.priority, e.received_at))
        return [self._drop(victim, "overflow", now)]

    def _drop(self, entry: Entry, reason: str, now: float) -> dict[str, Any]:
        del self._open[entry.line.id]
        self.tally.dropped[reason] += 1
        return {
            "type": "line_dropped", "id": entry.line.id, "reason": reason, "where": "bridge",
            "priority": entry.line.priority,
            "waited_ms": round(1000.0 * (now - entry.received_at), 1),
        }  # fmt: skip

    # -- to the server ---------------------------------------------------------------------
    @property
    def at_server(self) -> int:
        """Lines sent and not yet settled (waiting in the server's queue, or speaking)."""
        return sum(1 for e in self._open.values() if e.state != "held")

    def to_send(
        self, now: float, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """``line`` messages for the held lines that are due (now marked sent), highest
        priority first (at most ``limit``), and events for held lines whose TTL ran out
        (dropped here)."""
        messages: list[dict[str, Any]] = []
        events = self.expire_held(now)
        due = [e for e in self._open.values() if e.state == "held" and e.not_before <= now]
        due.sort(key=lambda e: (-e.line.priority, e.received_at))
        for e in due[:limit]:
            e.state, e.sent_at = "sent", now
            voice = self.language_voices.get(language_of(e.line.text))
            spoken = self.fields if voice is None or "voice" in self.fields else {
                **self.fields, "voice": voice}  # fmt: skip
            messages.append({
                **spoken, "type": "line", "id": e.line.id, "text": e.line.text,
                "priority": e.line.priority,
                "ttl_ms": round(max(1.0, e.ttl_left_ms(now)), 1),
            })  # fmt: skip
        return messages, events

    def expire_held(self, now: float) -> list[dict[str, Any]]:
        """Drop held lines whose TTL has run out (the server never saw them, or lost them)."""
        gone = [e for e in self._open.values() if e.state == "held" and e.ttl_left_ms(now) <= 0]
        return [self._drop(e, "expired", now) for e in gone]

    def give_up(self, now: float) -> list[dict[str, Any]]:
        """Lines sent ``grace_s`` past their TTL with no word from the server: unconfirmed."""
        out: list[dict[str, Any]] = []
        for e in [e for e in self._open.values() if e.state == "sent"]:
            if e.ttl_left_ms(now) <= -1000.0 * self.grace_s:
                del self._open[e.line.id]
                self.tally.unconfirmed += 1
                out.append({"type": "line_unconfirmed", "id": e.line.id,
                            "message": "the server never reported this line (spoken, dropped "
                                       "or refused); given up after its TTL"})  # fmt: skip
        return out

    def clear_sent(self) -> None:
        """Call when sending ``clear``: the ``cleared`` drops that follow are final."""
        self._cleared_by_us = True

    # -- connection ------------------------------------------------------------------------
    def disconnected(self, now: float) -> list[dict[str, Any]]:
        """The socket is gone: lines sent but not started are held again (the server's queue
        went with it); a line cut while speaking is ``interrupted``, unless none of its audio
        had arrived (then it is held again)."""
        events: list[dict[str, Any]] = []
        for e in list(self._open.values()):
            if e.state == "sent":
                e.state = "held"
            elif e.state == "speaking":
                if e.audio_bytes == 0:
                    e.state, e.not_before = "held", 0.0
                else:
                    del self._open[e.line.id]
                    self.tally.interrupted += 1
                    events.append({"type": "line_interrupted", "id": e.line.id,
                                   "audio_bytes": e.audio_bytes})  # fmt: skip
        self._speaking = None
        self._cleared_by_us = False
        return events

    # -- from the server -------------------------------------------------------------------
    def on_audio(self, nbytes: int) -> str | None:
        """A binary frame arrived; the id of the line it belongs to (None: not a line's)."""
        line_id = self._speaking
        if line_id is not None and line_id in self._open:
            self._open[line_id].audio_bytes += nbytes
        return line_id

    def on_event(self, event: dict[str, Any], now: float) -> list[dict[str, Any]]:
        """Account a server event; returns the bridge's own events it gives rise to."""
        kind = event.get("type")
        line_id = event.get("id")
        entry = self._open.get(line_id) if isinstance(line_id, str) else None
        if kind == "started":
            self._speaking = line_id if isinstance(line_id, str) else None
            if entry is not None:
                entry.state = "speaking"
        elif kind == "done":
            if line_id == self._speaking or line_id is None:
                self._speaking = None
            if entry is not None:
                del self._open[entry.line.id]
                if event.get("cancelled"):
                    self.tally.interrupted += 1
                else:
                    self.tally.spoken += 1
        elif kind == "line_dropped" and entry is not None:
            if event.get("reason") == "cleared" and not self._cleared_by_us:
                # The server cleared its queue without being asked (shutting down): hold the
                # line for the next connection.
                entry.state = "held"
                return [
                    {
                        "type": "line_held",
                        "id": entry.line.id,
                        "message": "the server cleared its queue; sent again on reconnect",
                    }
                ]
            del self._open[entry.line.id]
            self.tally.dropped[str(event.get("reason"))] += 1
        elif kind == "error" and entry is not None:
            if entry.line.id == self._speaking:
                self._speaking = None
            code = str(event.get("code"))
            if code == "busy" and entry.ttl_left_ms(now) > 0:
                entry.state, entry.not_before = "held", now + self.retry_busy_s
                return [
                    {
                        "type": "line_held",
                        "id": entry.line.id,
                        "message": f"the server was busy; sent again in {self.retry_busy_s} s",
                    }
                ]
            del self._open[entry.line.id]
            self.tally.refused[code] += 1
        return []


class Playout:
    """When a listener playing the received audio in real time will have heard it all:
    audio that arrives while earlier audio still plays queues behind it."""

    def __init__(self) -> None:
        self._end: float | None = None

    def audio(self, seconds: float, now: float) -> None:
        self._end = max(now, self._end if self._end is not None else now) + seconds

    def ahead_s(self, now: float) -> float:
        """Received audio not yet heard."""
        return 0.0 if self._end is None else max(0.0, self._end - now)


class Backoff:
    """Reconnect delays: ``initial_s`` doubling up to ``max_s``, each with up to ``jitter``
    (a fraction) added at random; :meth:`reset` after a connection that worked."""

    def __init__(
        self,
        *,
        initial_s: float = 0.5,
        max_s: float = 15.0,
        factor: float = 2.0,
        jitter: float = 0.2,
        rng: random.Random | None = None,
    ) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self.factor = factor
        self.jitter = jitter
        self.rng = rng or random.Random()
        self.failures = 0

    def next_delay(self) -> float:
        base = min(self.max_s, self.initial_s * self.factor**self.failures)
        self.failures += 1
        return base * (1.0 + self.jitter * self.rng.random())

    def reset(self) -> None:
        self.failures = 0
