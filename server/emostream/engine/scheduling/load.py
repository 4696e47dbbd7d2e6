"""The engine's load over a recent window, as admission reads it.

:class:`LoadWindow` keeps what the scheduler (:mod:`emostream.engine.scheduling.scheduler`)
did over its last ``window_s``: the device's busy spans (plans, and the loop's own host work),
the work delivered at full-batch cost, the streams started, the latency of urgent items and
the late deliveries, and each live stream's work so far (a finished stream's goes into a
moving average). :meth:`LoadWindow.snapshot` sums it up as a :class:`LoadSnapshot`, what
admission (:mod:`emostream.engine.admission`) and the engine's status block carry.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass


def nearest_rank(sorted_xs: list[float], q: float) -> float:
    """The ``q`` quantile of ascending ``sorted_xs`` by nearest rank (0.0 when empty)."""
    if not sorted_xs:
        return 0.0
    return sorted_xs[min(len(sorted_xs) - 1, max(0, math.ceil(q * len(sorted_xs)) - 1))]


@dataclass(frozen=True)
class LoadSnapshot:
    """What the scheduler knows of its load at ``now`` (see
    :meth:`~emostream.engine.scheduling.scheduler.EngineScheduler.load`)."""

    now: float
    live_streams: int
    queued: int
    busy_fraction: float  # device busy share over the window
    demand_fraction: float  # the window's rows at full-batch cost, per second (see load())
    urgent_p95_s: float  # engine latency of urgent items (0: none in the window)
    late_recent: int  # non-urgent items delivered after their need_by in the window
    starts_recent: int  # streams first seen in the window
    work_per_stream_s: float  # a finished stream's calls at full-batch cost (moving average)

    @property
    def committed_fraction(self) -> float:
        """Device share the streams started in the window commit to (their expected work
        per second): unlike ``demand_fraction`` it sees a burst of new streams at once."""
        window = self.window_s if self.window_s > 0 else 1.0
        return self.starts_recent * self.work_per_stream_s / window

    window_s: float = 2.0


class LoadWindow:
    """See the module docs. Times are the scheduler's clock; calls come in time order (the
    window's deques are trimmed at the front)."""

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        # Running sums and a sorted copy, so snapshot() does not walk its window every call.
        self._busy: deque[tuple[float, float]] = deque()  # (start, end) of busy spans
        self._busy_sum = 0.0  # of end - start over _busy
        self._work: deque[tuple[float, float]] = deque()  # (end, rows at full-batch cost)
        self._work_sum = 0.0  # of the rows' cost over _work
        self._starts: deque[float] = deque()  # when streams were first seen
        self._stream_work: dict[Hashable, float] = {}  # work delivered so far, per stream
        self.work_per_stream_s = 0.0  # moving average over finished streams
        self._urgent: deque[tuple[float, float]] = deque()  # (delivered at, latency)
        self._urgent_sorted: list[float] = []  # the latencies of _urgent, ascending
        self._late: deque[float] = deque()  # when late items were delivered

    def started(self, stream: Hashable, now: float) -> None:
        """``stream`` was first seen at ``now``."""
        self._starts.append(now)
        self._stream_work.setdefault(stream, 0.0)

    def finished(self, stream: Hashable) -> None:
        """``stream`` is gone: its work so far goes into :attr:`work_per_stream_s`."""
        work = self._stream_work.pop(stream, 0.0)
        if work > 0.0:
            old = self.work_per_stream_s
            self.work_per_stream_s = work if old == 0.0 else old + 0.05 * (work - old)

    def ran(self, start: float, end: float, work: float) -> None:
        """A plan ran from ``start`` to ``end``: busy, and ``work`` (its rows at full-batch
        cost) delivered at ``end``."""
        self.add_busy(start, end)
        self._work.append((end, work))
        self._work_sum += work

    def delivered(
        self, stream: Hashable, now: float, row_s: float, *, urgent_s: float | None, late: bool
    ) -> None:
        """One item of ``stream`` delivered at ``now``: ``row_s`` of work for its stream,
        ``urgent_s``: an urgent item's latency (else None), ``late``: after its need_by."""
        if late:
            self._late.append(now)
        if urgent_s is not None:
            self._urgent.append((now, urgent_s))
            bisect.insort(self._urgent_sorted, urgent_s)
        if stream in self._stream_work:
            self._stream_work[stream] += row_s

    def add_busy(self, start: float, end: float) -> None:
        """Append a busy span, merged into the last ones it touches or overlaps (a loop
        iteration's span holds its plan's: one span per iteration, not two)."""
        busy = self._busy
        while busy:
            a, b = busy[-1]
            if a <= start and end <= b:
                return  # counted already
            if start > b:
                break
            busy.pop()  # touching or overlapping: one span
            self._busy_sum -= b - a
            start, end = min(a, start), max(b, end)
        busy.append((start, end))
        self._busy_sum += end - start

    def busy_share(self, now: float, window_s: float) -> float:
        """The share of the last ``window_s`` the device was busy (spans do not overlap;
        :meth:`snapshot` keeps ``self.window_s`` of them)."""
        start, busy = now - window_s, 0.0
        for a, b in reversed(self._busy):  # newest first
            if b <= start:
                break
            busy += min(b, now) - max(a, start)
        return min(1.0, max(0.0, busy / window_s))

    def snapshot(self, now: float, *, live_streams: int, queued: int) -> LoadSnapshot:
        """The load at ``now`` (not before any earlier call's ``now``: the window's deques
        are trimmed at the front, and plans run one at a time, in order)."""
        start = now - self.window_s
        busy_q, urgent = self._busy, self._urgent
        while busy_q and busy_q[0][1] <= start:
            a, b = busy_q.popleft()
            self._busy_sum -= b - a
        while urgent and urgent[0][0] <= start:
            _, x = urgent.popleft()
            del self._urgent_sorted[bisect.bisect_left(self._urgent_sorted, x)]
        while self._late and self._late[0] <= start:
            self._late.popleft()
        while self._work and self._work[0][0] <= start:
            self._work_sum -= self._work.popleft()[1]
        while self._starts and self._starts[0] <= start:
            self._starts.popleft()
        if not busy_q:
            self._busy_sum = 0.0  # no rounding left behind
        if not self._work:
            self._work_sum = 0.0
        # Plans that began before the window, or (a caller's clock) end after now: clipped.
        busy = self._busy_sum
        for a, b in busy_q:
            if a >= start:
                break
            busy += min(b, now) - max(a, start) - (b - a)
        for a, b in reversed(busy_q):
            if b <= now or a < start:
                break
            busy += now - b
        return LoadSnapshot(
            now=now,
            live_streams=live_streams,
            queued=queued,
            busy_fraction=min(1.0, max(0.0, busy / self.window_s)),
            demand_fraction=self._work_sum / self.window_s,
            starts_recent=len(self._starts),
            work_per_stream_s=self.work_per_stream_s,
            window_s=self.window_s,
            urgent_p95_s=nearest_rank(self._urgent_sorted, 0.95),
            late_recent=len(self._late),
        )
