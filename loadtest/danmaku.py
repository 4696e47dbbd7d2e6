"""The ``danmaku`` pattern's bookkeeping (sans-I/O): lines sent on one connection (a room),
what the server said of each, and what a listener of the room would have heard.

A room sends bursts of ``line`` messages (repeated phrases mixed with fresh ones) and the
server speaks them one at a time from its queue. :class:`RoomLedger` takes every message
sent and received with its client-clock time (ms) and answers the pattern's questions:

* **TTL, at the listener**: no line may begin to be *heard* (below) later than its TTL after
  it was *sent*: what "no line older than its TTL is ever spoken" means to someone listening.
* **TTL, at the server**: no line may start later than its TTL after it was sent
  (``started`` − send); implied by the check above, kept to tell the two apart.
* **Backlog**: the depth in every ``queue`` event stays within the bound.
* **Accounting**: every line sent is spoken (``started`` … ``done``), dropped with a reason
  (``line_dropped``) or refused (``error`` with its ``id``); none is left unreported.
* **Listening**: :class:`RoomPlayout` plays the room's lines back to back in real time
  (each from its first packet plus a jitter buffer, or after the previous line ends):
  underruns inside a line, and when each line would begin to be *heard*.
* **First audio**: ``started`` → first packet, for lines the server spoke live and for
  those it replayed from its phrase cache (``done.cached``).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from loadtest.stats import Histogram, summary

# What chat says again and again (the phrase cache's work) ...
REPEATED: tuple[str, ...] = (
    "Thanks for the follow!",
    "Welcome to the stream!",
    "Thank you so much for the gift!",
    "Hi chat, good to see you!",
    "Haha, good one.",
    "See you all tomorrow!",
)
# ... and lines never said before (each made unique with a running number).
_NAMES = ("Ann", "Bo", "Chen", "Dana", "Eli", "Fay", "Gus", "Hana", "Ivo", "June")
_ASKS = (
    "asks what game we play next",
    "wants to know your favourite snack",
    "says the last round was wild",
    "asks how long the stream lasts today",
    "thinks the boss fight is too hard",
    "says hello from a rainy city",
)


def make_lines(
    rng: random.Random, count: int, *, first: int, repeat_fraction: float
) -> list[tuple[str, bool]]:
    """``count`` chat lines (text, is it a repeated phrase): a repeated phrase with
    probability ``repeat_fraction``, else a fresh line numbered from ``first``."""
    out: list[tuple[str, bool]] = []
    for k in range(first, first + count):
        if rng.random() < repeat_fraction:
            out.append((rng.choice(REPEATED), True))
        else:
            name, ask = rng.choice(_NAMES), rng.choice(_ASKS)
            out.append((f"Message {k}: {name} {ask}.", False))
    return out


@dataclass
class LineRecord:
    """One line as the client saw it (client clock, ms)."""

    id: str
    room: int
    text: str
    repeated: bool
    priority: int
    ttl_ms: float
    sent_ms: float
    started_ms: float | None = None
    first_packet_ms: float | None = None
    done_ms: float | None = None
    cached: bool | None = None
    cancelled: bool = False
    dropped: str | None = None  # line_dropped reason
    server_waited_ms: float | None = None  # from line_dropped
    error: str | None = None  # a refusal's code (error with this id)
    speed: float | None = None  # from started
    server_first_audio_ms: float | None = None
    server_audio_ms: float | None = None
    packets: int = 0
    heard_ms: float | None = None  # when a real-time listener would begin to hear it
    underruns: int = 0
    underrun_ms: float = 0.0
    gaps: Histogram = field(default_factory=Histogram)
    jitter: Histogram = field(default_factory=Histogram)
    last_packet_ms: float | None = None

    @property
    def outcome(self) -> str:
        """``spoken``, ``cancelled``, ``dropped``, ``refused``, ``speaking`` (started, no
        ``done`` yet) or ``unreported``."""
        if self.done_ms is not None:
            return "cancelled" if self.cancelled else "spoken"
        if self.dropped is not None:
            return "dropped"
        if self.error is not None:
            return "refused"
        return "speaking" if self.started_ms is not None else "unreported"

    @property
    def start_delay_ms(self) -> float | None:
        """Send → ``started``: how long it waited (the TTL check)."""
        return None if self.started_ms is None else self.started_ms - self.sent_ms

    @property
    def first_audio_ms(self) -> float | None:
        """``started`` → first packet."""
        if self.started_ms is None or self.first_packet_ms is None:
            return None
        return self.first_packet_ms - self.started_ms

    @property
    def heard_delay_ms(self) -> float | None:
        """Send → when a listener playing the room in real time begins to hear it."""
        return None if self.heard_ms is None else self.heard_ms - self.sent_ms


class RoomPlayout:
    """A listener playing a room's lines back to back in real time.

    A line's first packet plays ``jitter_buffer_ms`` after it arrives, or when the audio
    before it has played out, whichever is later; every later packet of the line plays
    ``frame_ms`` after the one before. A packet that arrives after its play time is an
    underrun (playback resumes at its arrival). Silence *between* lines is not an underrun."""

    def __init__(self, *, jitter_buffer_ms: float = 60.0, frame_ms: float = 20.0) -> None:
        self.jitter_buffer_ms = jitter_buffer_ms
        self.frame_ms = frame_ms
        self._next_play_ms = -1e18
        self._line: LineRecord | None = None

    def begin(self, line: LineRecord | None) -> None:
        """The next packets are ``line``'s (None: not a line's; they are not played)."""
        self._line = line

    def packet(self, t_ms: float) -> None:
        line = self._line
        if line is None:
            return
        if line.packets == 0:
            line.first_packet_ms = t_ms
            line.heard_ms = max(t_ms + self.jitter_buffer_ms, self._next_play_ms)
            self._next_play_ms = line.heard_ms
        else:
            assert line.last_packet_ms is not None
            gap = t_ms - line.last_packet_ms
            line.gaps.add(gap)
            line.jitter.add(abs(gap - self.frame_ms))
            if t_ms > self._next_play_ms:
                line.underruns += 1
                line.underrun_ms += t_ms - self._next_play_ms
                self._next_play_ms = t_ms
        line.packets += 1
        line.last_packet_ms = t_ms
        self._next_play_ms += self.frame_ms

    @property
    def played_out_ms(self) -> float:
        """When everything received so far has been heard."""
        return self._next_play_ms


class RoomLedger:
    """Every line of one room and every event about it."""

    def __init__(self, room: int, *, jitter_buffer_ms: float = 60.0) -> None:
        self.room = room
        self.lines: dict[str, LineRecord] = {}
        self.playout = RoomPlayout(jitter_buffer_ms=jitter_buffer_ms)
        self.depths: list[int] = []  # every queue event's depth
        self.queue_waits_ms: list[float] = []
        self.speeds: list[float] = []
        self.unknown_ids: Counter[str] = Counter()  # events naming a line never sent
        self.other_errors: Counter[str] = Counter()  # errors without a line id
        self.drops_without_reason = 0

    def sent(self, rec: LineRecord) -> None:
        self.lines[rec.id] = rec

    def packet(self, t_ms: float) -> None:
        self.playout.packet(t_ms)

    def event(self, ev: dict[str, Any], t_ms: float) -> None:
        kind = ev.get("type")
        line_id = ev.get("id")
        rec = self.lines.get(line_id) if isinstance(line_id, str) else None
        if kind == "queue":
            self.depths.append(int(ev.get("depth", 0)))
            self.queue_waits_ms.append(float(ev.get("wait_ms", 0.0)))
            self.speeds.append(float(ev.get("speed", 1.0)))
            return
        if kind in ("started", "done", "line_dropped") and rec is None:
            self.unknown_ids[kind] += 1
            if kind == "started":
                self.playout.begin(None)
            return
        if kind == "started" and rec is not None:
            rec.started_ms = t_ms
            rec.speed = ev.get("speed")
            self.playout.frame_ms = float(ev.get("frame_ms", self.playout.frame_ms))
            self.playout.begin(rec)
        elif kind == "done" and rec is not None:
            rec.done_ms = t_ms
            rec.cached = bool(ev.get("cached", False))
            rec.cancelled = bool(ev.get("cancelled", False))
            rec.server_first_audio_ms = ev.get("first_audio_ms")
            rec.server_audio_ms = ev.get("audio_ms")
            self.playout.begin(None)
        elif kind == "line_dropped" and rec is not None:
            reason = ev.get("reason")
            if not reason:
                self.drops_without_reason += 1
            rec.dropped = str(reason)
            rec.server_waited_ms = ev.get("waited_ms")
        elif kind == "error":
            if rec is not None:
                rec.error = str(ev.get("code"))
            else:
                self.other_errors[str(ev.get("code"))] += 1

    @property
    def settled(self) -> bool:
        """Every line sent has an outcome the server reported."""
        return all(r.outcome in ("spoken", "cancelled", "dropped", "refused")
                   for r in self.lines.values())  # fmt: skip


def _vals(xs: list[float | None]) -> list[float]:
    return [x for x in xs if x is not None]


def danmaku_summary(ledgers: list[RoomLedger], *, queue_max: int) -> dict[str, Any]:
    """The pattern's checks and figures over every room."""
    recs = [r for led in ledgers for r in led.lines.values()]
    outcomes = Counter(r.outcome for r in recs)
    spoken = [r for r in recs if r.outcome == "spoken"]
    late = [r for r in recs if r.start_delay_ms is not None and r.start_delay_ms > r.ttl_ms]
    heard_late = [r for r in recs if r.heard_delay_ms is not None and r.heard_delay_ms > r.ttl_ms]
    depths = [d for led in ledgers for d in led.depths]
    drops = Counter(r.dropped for r in recs if r.dropped is not None)
    refused = Counter(r.error for r in recs if r.outcome == "refused")
    live = [r for r in spoken if not r.cached]
    cached = [r for r in spoken if r.cached]
    underruns = sum(r.underruns for r in spoken)
    audio_min = sum(r.packets for r in spoken) * 20.0 / 60_000.0
    unreported = [r.id for r in recs if r.outcome in ("unreported", "speaking")]
    expired_waits = [r.server_waited_ms for r in recs if r.dropped == "expired"]
    checks: dict[str, dict[str, Any]] = {
        "ttl": {
            "ok": not heard_late,
            "judged": "listener",
            "lines_heard_past_ttl": len(heard_late),
            "worst_ms_past_ttl": round(
                max((r.heard_delay_ms or 0) - r.ttl_ms for r in heard_late), 1
            )
            if heard_late
            else None,
        },
        "ttl_started": {
            "ok": not late,
            "lines_started_past_ttl": len(late),
            "worst_ms_past_ttl": round(max((r.start_delay_ms or 0) - r.ttl_ms for r in late), 1)
            if late
            else None,
        },
        "backlog": {
            "ok": bool(depths) and max(depths) <= queue_max,
            "bound": queue_max,
            "max_depth": max(depths) if depths else None,
            "queue_events": len(depths),
        },
        "accounting": {
            "ok": not unreported
            and len(recs)
            == outcomes["spoken"]
            + outcomes["cancelled"]
            + outcomes["dropped"]
            + outcomes["refused"]
            and not any(led.drops_without_reason for led in ledgers),
            "sent": len(recs),
            "spoken": outcomes["spoken"],
            "cancelled": outcomes["cancelled"],
            "dropped": dict(sorted(drops.items())),
            "refused": dict(sorted(refused.items())),
            "unreported": len(unreported),
            "unreported_ids": unreported[:20],
            "events_for_unknown_ids": sum(sum(led.unknown_ids.values()) for led in ledgers),
            "errors_without_id": dict(
                sum((led.other_errors for led in ledgers), Counter()).items()
            ),
        },
        "underruns": {
            "ok": underruns == 0,
            "count": underruns,
            "total_ms": round(sum(r.underrun_ms for r in spoken), 1),
            "per_minute_of_audio": round(underruns / audio_min, 3) if audio_min else None,
            "lines_with_underrun": sum(1 for r in spoken if r.underruns),
        },
    }
    return {
        "rooms": len(ledgers),
        "checks": checks,
        "ok": all(c["ok"] for c in checks.values()),
        "start_delay_ms": summary(_vals([r.start_delay_ms for r in spoken])),
        "first_audio_ms": {
            "live": summary(_vals([r.first_audio_ms for r in live])),
            "cached": summary(_vals([r.first_audio_ms for r in cached]), digits=2),
        },
        "server_first_audio_ms": {
            "live": summary(_vals([r.server_first_audio_ms for r in live])),
            "cached": summary(_vals([r.server_first_audio_ms for r in cached]), digits=2),
        },
        "repeated_phrases": {
            "sent": sum(1 for r in recs if r.repeated),
            "spoken": sum(1 for r in spoken if r.repeated),
            "spoken_from_cache": sum(1 for r in cached if r.repeated),
        },
        "listener": {
            "heard_delay_ms": summary(_vals([r.heard_delay_ms for r in spoken])),
            "lines_heard_past_ttl": len(heard_late),
        },
        "queue": {
            "depth": summary([float(d) for d in depths]),
            "wait_ms": summary([w for led in ledgers for w in led.queue_waits_ms]),
            "speed_max": max((s for led in ledgers for s in led.speeds), default=None),
        },
        "expired_waited_ms": summary(_vals(expired_waits)),
        "speed": summary(_vals([r.speed for r in spoken]), digits=3),
    }
