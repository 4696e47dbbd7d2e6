"""A per-connection queue of lines to speak (danmaku, chat), with priority and TTL (sans-I/O).

Every call takes ``now`` (seconds, any monotonic clock); nothing here sleeps, sends or speaks.

* Order: highest ``priority`` first, oldest first within a priority.
* TTL: a line whose age has reached its ``ttl_s`` is never handed out by :meth:`LineQueue.pop`;
  it is dropped (``expired``) by whichever call sees it first (:meth:`expire`,
  :meth:`push`, :meth:`pop`); :meth:`next_expiry` says when to call :meth:`expire` so the
  client hears of it promptly.
* Backlog: at most ``max_lines`` wait. A line pushed onto a full queue drops the lowest
  priority line, the oldest of those (possibly the new line itself, when every waiting line
  outranks it): ``overflow``.
* Every line that leaves other than by :meth:`pop` comes back as a :class:`Dropped` (also
  :meth:`clear`: ``cleared``), so the I/O layer can report each one.
* Rate: :meth:`speed` rises with the backlog left after a pop, by ``speedup_per_line`` per
  line past ``speedup_from``, up to ``max_speed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

DropReason = Literal["expired", "overflow", "cleared"]


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
    ) -> None:
        """``max_lines``: the backlog bound (>= 1); ``speedup_from``: lines left waiting
        before the rate rises; ``speedup_per_line``: rise per further line; ``max_speed``:
        its bound (a factor on the line's own speed, >= 1)."""
        if max_lines < 1:
            raise ValueError("max_lines must be >= 1")
        if max_speed < 1.0 or speedup_per_line < 0:
            raise ValueError("max_speed must be >= 1 and speedup_per_line >= 0")
        self.max_lines = max_lines
        self.speedup_from = speedup_from
        self.speedup_per_line = speedup_per_line
        self.max_speed = max_speed
        self._lines: list[Line] = []
        self._seq = 0

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
        if line.ttl_s <= 0:
            return [*dropped, Dropped(line, "expired", now)]
        self._lines.append(line)
        if len(self._lines) > self.max_lines:
            victim = min(self._lines, key=lambda ln: (ln.priority, ln.seq))
            self._lines.remove(victim)
            dropped.append(Dropped(victim, "overflow", now))
        return dropped

    def pop(self, now: float) -> tuple[Line | None, list[Dropped]]:
        """The next line to speak (none past its TTL), and the lines that expired."""
        dropped = self.expire(now)
        if not self._lines:
            return None, dropped
        best = min(self._lines, key=lambda ln: (-ln.priority, ln.seq))
        self._lines.remove(best)
        return best, dropped

    def expire(self, now: float) -> list[Dropped]:
        """Drop every line whose TTL has run out."""
        gone = [ln for ln in self._lines if ln.expired(now)]
        if gone:
            self._lines = [ln for ln in self._lines if not ln.expired(now)]
        return [Dropped(ln, "expired", now) for ln in sorted(gone, key=lambda ln: ln.seq)]

    def clear(self, now: float) -> list[Dropped]:
        gone, self._lines = sorted(self._lines, key=lambda ln: ln.seq), []
        return [Dropped(ln, "cleared", now) for ln in gone]

    def next_expiry(self) -> float | None:
        """When the next waiting line expires (None: nothing waits)."""
        return min((ln.expires_at for ln in self._lines), default=None)

    def speed(self, backlog: int | None = None) -> float:
        """The rate factor for a line popped with ``backlog`` lines still waiting (default:
        those waiting now)."""
        depth = len(self._lines) if backlog is None else backlog
        extra = max(0, depth - self.speedup_from) * self.speedup_per_line
        return min(self.max_speed, 1.0 + extra)

    def status(self, now: float) -> dict[str, Any]:
        """A ``queue`` event: depth, the oldest line's wait, the rate factor now."""
        oldest = min((ln.enqueued_at for ln in self._lines), default=now)
        return {
            "type": "queue",
            "depth": len(self._lines),
            "wait_ms": round(1000.0 * (now - oldest), 1),
            "speed": round(self.speed(), 3),
        }
