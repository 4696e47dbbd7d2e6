"""A per-connection queue of lines to speak (danmaku, chat), with priority and TTL (sans-I/O).

Every call takes ``now`` (seconds, any monotonic clock); nothing here sleeps, sends or speaks.

* Order: highest ``priority`` first, oldest first within a priority.
* Pacing (``lead_s`` > 0): the connection's :class:`Playout` clock says how far the audio
  already sent is ahead of a listener who plays it in real time; :meth:`LineQueue.pop` hands
  out a line only when that is at most ``lead_s`` (:meth:`LineQueue.ready_at` says when), so
  lines wait here, not in the listener's buffer. ``lead_s`` 0: no pacing (lines go as fast as
  they are made, for bulk rendering), and a line's TTL is judged when it starts.
* TTL: paced, a line is *heard* (:meth:`LineQueue.heard_at`) when the audio before it has
  played out, plus ``hear_delay_s`` (first audio, the listener's jitter buffer, the network).
  A line that would be heard when its age has reached its ``ttl_s`` is never handed out by
  :meth:`LineQueue.pop`; it is dropped (``expired``) by whichever call sees it first
  (:meth:`expire`, :meth:`push`, :meth:`pop`), possibly before its TTL has passed, once it
  can no longer be heard in time; :meth:`next_expiry` says when to call :meth:`expire` so the
  client hears of it promptly.
* Backlog: at most ``max_lines`` wait. A line pushed onto a full queue drops the lowest
  priority line, the oldest of those (possibly the new line itself, when every waiting line
  outranks it): ``overflow``.
* Every line that leaves other than by :meth:`pop` comes back as a :class:`Dropped` (also
  :meth:`clear`: ``cleared``), so the I/O layer can report each one.
* Rate: :meth:`speed` rises with the backlog left after a pop, by ``speedup_per_line`` per
  line past ``speedup_from``, up to ``max_speed``, rounded down to one of a few steps
  (:data:`SPEED_STEPS`, and ``max_speed``) so that a phrase spoken again at a raised rate
  finds its earlier rendering in the phrase cache (the rate is part of its key).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DropReason = Literal["expired", "overflow", "cleared"]
# The rate factors a backlog may raise a line to (each at most ``max_speed``, which is one too).
SPEED_STEPS: tuple[float, ...] = (1.0, 1.15, 1.3, 1.5)


class Playout:
    """A connection's playout clock: when a listener who plays every packet sent, back to back
    in real time from its arrival, will have heard it all. Audio sent while earlier audio still
    plays queues behind it; audio sent after the listener caught up (or after idle) starts a
    new run at once."""

    def __init__(self) -> None:
        self.end = float("-inf")  # when everything sent so far has been heard

    def sent(self, seconds: float, now: float) -> None:
        """``seconds`` of audio were sent at ``now``."""
        self.end = max(self.end, now) + seconds

    def ahead(self, now: float) -> float:
        """Audio sent and not yet heard (0 once the listener has caught up)."""
        return max(0.0, self.end - now)


@dataclass(frozen=True)
class Line:
    id: str
    text: str
    priority: int = 0
    ttl_s: float = 10.0
    enqueued_at: float = 0.0
    seq: int = 0  # arrival order (set by the queue)
    # What the line is spoken with (``start`` fields: voice, controls, format); opaque here.
    fields: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def expires_at(self) -> float:
        return self.enqueued_at + self.ttl_s

    def age(self, now: float) -> float:
        return now - self.enqueued_at

    def expired(self, now: float) -> bool:
        """Its age has reached its TTL (compared as an age, exact in floating point)."""
        return self.age(now) >= self.ttl_s


@dataclass(frozen=True)
class Dropped:
    line: Line
    reason: DropReason
    at: float

    @property
    def event(self) -> dict[str, Any]:
        return {
            "type": "line_dropped",
            "id": self.line.id,
            "reason": self.reason,
            "priority": self.line.priority,
            "waited_ms": round(1000.0 * self.line.age(self.at), 1),
        }


class LineQueue:
    def __init__(
        self,
        *,
        max_lines: int = 32,
        speedup_from: int = 2,
        speedup_per_line: float = 0.05,
        max_speed: float = 1.5,
        lead_s: float = 0.0,
        hear_delay_s: float = 0.0,
        playout: Playout | None = None,
    ) -> None:
        """``max_lines``: the backlog bound (>= 1); ``speedup_from``: lines left waiting
        before the rate rises; ``speedup_per_line``: rise per further line; ``max_speed``:
        its bound (a factor on the line's own speed, >= 1). ``lead_s``: hand out a line only
        when ``playout`` (the connection's clock, which the I/O layer feeds) is at most this
        far ahead of real time (0: no pacing); ``hear_delay_s``: from when a paced line's audio
        would start to play to when it is heard."""
        if max_lines < 1:
            raise ValueError("max_lines must be >= 1")
        if max_speed < 1.0 or speedup_per_line < 0:
            raise ValueError("max_speed must be >= 1 and speedup_per_line >= 0")
        if lead_s < 0 or hear_delay_s < 0:
            raise ValueError("lead_s and hear_delay_s must be >= 0")
        self.max_lines = max_lines
        self.speedup_from = speedup_from
        self.speedup_per_line = speedup_per_line
        self.max_speed = max_speed
        self.lead_s = lead_s
        self.hear_delay_s = hear_delay_s if lead_s > 0 else 0.0
        self.playout = playout if playout is not None else Playout()
        self._steps = sorted({*(s for s in SPEED_STEPS if s < max_speed), max_speed})
        self._lines: list[Line] = []
        self._seq = 0

    @property
    def paced(self) -> bool:
        return self.lead_s > 0

    def heard_at(self, now: float) -> float:
        """When a line handed out at ``now`` would begin to be heard (unpaced: ``now``)."""
        if not self.paced:
            return now
        return max(now, self.playout.end) + self.hear_delay_s

    def ready_at(self) -> float:
        """From when :meth:`pop` may hand out a line (the listener is at most ``lead_s``
        ahead; unpaced: always)."""
        return self.playout.end - self.lead_s if self.paced else float("-inf")

    def __len__(self) -> int:
        return len(self._lines)

    @property
    def lines(self) -> tuple[Line, ...]:
        """Waiting lines in speaking order."""
        return tuple(sorted(self._lines, key=lambda ln: (-ln.priority, ln.seq)))

    def push(self, line: Line, now: float) -> list[Dropped]:
        """Queue ``line`` (its ``enqueued_at`` and ``seq`` are set here); what was dropped."""
        dropped = self.expire(now)
        self._seq += 1
        line = Line(line.id, line.text, line.priority, line.ttl_s, now, self._seq, line.fields)
        if line.expired(self.heard_at(now)):  # no time at all, or never heard in time
            return [*dropped, Dropped(line, "expired", now)]
        self._lines.append(line)
        if len(self._lines) > self.max_lines:
            victim = min(self._lines, key=lambda ln: (ln.priority, ln.seq))
            self._lines.remove(victim)
            dropped.append(Dropped(victim, "overflow", now))
        return dropped

    def pop(self, now: float) -> tuple[Line | None, list[Dropped]]:
        """The next line to speak (none heard past its TTL; none before :meth:`ready_at`),
        and the lines that expired."""
        dropped = self.expire(now)
        if not self._lines or now < self.ready_at():
            return None, dropped
        best = min(self._lines, key=lambda ln: (-ln.priority, ln.seq))
        self._lines.remove(best)
        return best, dropped

    def expire(self, now: float) -> list[Dropped]:
        """Drop every line that could no longer be heard within its TTL (unpaced: whose TTL
        has run out)."""
        heard = self.heard_at(now)
        gone = [ln for ln in self._lines if ln.expired(heard)]
        if gone:
            self._lines = [ln for ln in self._lines if not ln.expired(heard)]
        return [Dropped(ln, "expired", now) for ln in sorted(gone, key=lambda ln: ln.seq)]

    def clear(self, now: float) -> list[Dropped]:
        gone, self._lines = sorted(self._lines, key=lambda ln: ln.seq), []
        return [Dropped(ln, "cleared", now) for ln in gone]

    def next_expiry(self) -> float | None:
        """When the next waiting line expires if no more audio is sent (None: nothing waits)."""
        first = min((ln.expires_at for ln in self._lines), default=None)
        return None if first is None else first - self.hear_delay_s

    def wake_at(self, *, may_start: bool) -> float | None:
        """When the I/O layer should look at the queue again (None: only when told):
        the next expiry, and, when lines wait and the socket may start one, when the
        listener comes within the lead (possibly already past: look again at once)."""
        due = self.next_expiry()
        if may_start and self._lines and self.paced:
            ready = self.ready_at()
            due = ready if due is None else min(due, ready)
        return due

    def speed(self, backlog: int | None = None) -> float:
        """The rate factor for a line popped with ``backlog`` lines still waiting (default:
        those waiting now): the highest step not above ``1 + speedup_per_line`` per line past
        ``speedup_from``."""
        depth = len(self._lines) if backlog is None else backlog
        raw = 1.0 + max(0, depth - self.speedup_from) * self.speedup_per_line
        return max((s for s in self._steps if s <= raw + 1e-9), default=1.0)

    def status(self, now: float) -> dict[str, Any]:
        """A ``queue`` event: depth, the oldest line's wait, the rate factor now."""
        oldest = min((ln.enqueued_at for ln in self._lines), default=now)
        return {
            "type": "queue",
            "depth": len(self._lines),
            "wait_ms": round(1000.0 * (now - oldest), 1),
            "speed": round(self.speed(), 3),
        }
