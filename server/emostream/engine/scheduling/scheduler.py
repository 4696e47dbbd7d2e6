"""One scheduler for every model call of every stream on one device (sans-I/O).

The engine process (:mod:`emostream.engine.core`) runs the loop vLLM's
``EngineCore.step`` has: **schedule** (this module picks the next batch), **execute** (the
device runs it), **deliver** (results go back by request id). Acoustic-model calls and
vocoder windows share one queue, so the two stages no longer have their own threads and
schedulers competing for the device.

* **Stages**: each batched stage (a model) has a
  :class:`~emostream.engine.scheduling.work.StageSpec`: its batch sizes and, when the
  executor needs padded shapes (CUDA graphs), its length buckets. Items of one stage key
  batch together; the key is what a voice declares
  (:class:`emostream.voices.base.BatchedStage`), so no voice type is checked here.
* **Earliest deadline first**: every item carries ``due`` (``time.monotonic``: when it
  should be done, e.g. when the listener runs out of audio; a new utterance's work is due
  at once). The most urgent
  queued item, whatever its stage, picks the stage and the smallest length bucket that
  holds it.
* **Late**: an item may also carry ``need_by``, when the listener actually runs out of
  audio without it (default: its ``due``). A caller that schedules a call ahead of that,
  as the streamer does with a later segment's acoustic call (due
  :data:`~emostream.stream.streamer.LOOKAHEAD_LEAD_S` before the listener could run out),
  passes both: the call is ordered by ``due`` but counted late (``stats.late``,
  :meth:`EngineScheduler.load`'s ``late_recent``, which admission refuses on) only when
  delivered after ``need_by``. Counted against ``due``, look-ahead calls read as late while
  no listener ran short, and admission, refusing while any is late, would have answered
  ``busy`` (measured: docs/measurements.md, "Engine scheduler and loop").
* **Batch**: rows are taken in passes over the stage's streams, most urgent first, one
  item per stream per pass (a stream with a backlog fills spare rows only after every
  other stream had one: no stream starves another), a stream's items in submission order.
  A longer length bucket is chosen when it carries more real frames per second of device
  time (the :class:`~emostream.engine.scheduling.work.CostModel`). The batch is **closed**
  when one more row would push the batch's cost past the most urgent item's slack, unless
  that item is late anyway (then the fullest batch clears the backlog fastest).
* **Linger** (a stage's ``linger_s``; 0: never): under load, a stage whose calls cost
  mostly a fixed overhead (the acoustic model) should run few large batches, not many of
  2-3 requests. When such a stage's most urgent item would go next, its batch is **held**
  while all of these hold: the batch would be small (its cost per row more than
  ``LINGER_GAIN`` times a full batch's); the device is loaded (it was busy at least
  ``linger_busy`` of the last ``linger_window_s``: an idle engine never waits, so one
  stream's first audio is as fast as without; the busy share, not the rows at full-batch
  cost, because a device kept busy by small batches is the one that needs them larger);
  the stage's recent arrivals make one more request likely before the hold ends; and the
  hold ends in the future. It ends at the earliest of: its oldest item's submission +
  ``linger_s``, and the **latest start**: the earliest :meth:`~EngineScheduler.close_by`
  of its items (the due time; for an urgent item, a first segment's call, its submission +
  ``linger_budget_s``) less the cost of the batch with one more row. Meanwhile the most
  urgent item of another stage runs, in a batch that also ends by that latest start (no
  batch is started that would overrun it: when not one row fits, the held stage runs at
  once); with nothing else queued, :meth:`EngineScheduler.schedule` returns None and
  :attr:`EngineScheduler.wake_at` says when to call it again (a submission may end the hold
  sooner). The engine's part of a first audio under load is then within ``linger_budget_s``
  + ``urgent_budget_s`` (75 ms by default; admission's bound is 100 ms). Why a fixed cost
  and the busy share (measured: docs/measurements.md, "Engine scheduler and loop").
* **Deliver / cancel**: :meth:`EngineScheduler.complete` returns the deliveries of a
  finished plan, less those of streams cancelled meanwhile; :meth:`EngineScheduler.cancel`
  drops a stream's queued items (returned, for the I/O layer to fail their waiters) and
  forgets the stream.
* **Load**: :meth:`EngineScheduler.load` summarises what admission
  (:mod:`emostream.engine.admission`) needs: live streams, the device's busy share and
  the engine's latency of urgent items over the last ``window_s``
  (:class:`~emostream.engine.scheduling.load.LoadWindow`).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

from emostream.engine.scheduling.load import LoadSnapshot, LoadWindow
from emostream.engine.scheduling.work import (
    CostModel,
    Delivery,
    Plan,
    SchedulerStats,
    StageSpec,
    WorkItem,
)

# When a stream's listener has less than this much audio buffered, its next chunk is short
# again (the streamer's rule; the engine simulator follows it).
REFILL_AHEAD_S = 0.3
# A lingering stage's batch is "small" while its cost per row is above this multiple of a
# full batch's (measured: docs/measurements.md, "Engine scheduler and loop").
LINGER_GAIN = 1.25


class EngineScheduler:
    """See the module docs. Not thread-safe: the engine loop owns it."""

    def __init__(
        self,
        stages: Iterable[StageSpec],
        cost: CostModel,
        *,
        window_s: float = 2.0,
        stream_idle_s: float = 30.0,
        urgent_budget_s: float = 0.025,
        linger_busy: float = 0.7,
        linger_window_s: float = 0.2,
        linger_budget_s: float = 0.05,
    ) -> None:
        """``window_s``: what :meth:`load` looks back over; ``stream_idle_s``: a stream with
        no call this long is no longer live; ``urgent_budget_s``: the batch-closing slack
        of an urgent item (a first chunk is due at once, yet a batch may take this long);
        ``linger_busy`` / ``linger_window_s``: a stage with ``linger_s`` holds its batches
        only while the device was busy at least this share of the last this long;
        ``linger_budget_s``: a held urgent item's batch must be done
        this soon after its submission (module docs: Linger)."""
        if not 0.0 < linger_window_s <= window_s:  # the busy share is read from load()'s window
            raise ValueError(f"linger_window_s must be in (0, window_s]: {linger_window_s}")
        self.urgent_budget_s = urgent_budget_s
        self.linger_busy = linger_busy
        self.linger_window_s = linger_window_s
        self.linger_budget_s = linger_budget_s
        self.wake_at: float | None = None  # set by schedule(): a hold ends then (else None)
        self._arrivals: dict[str, deque[float]] = {}  # lingering stages' recent submissions
        self.stages: dict[str, StageSpec] = {}
        self.cost = cost
        self.window_s = window_s
        self.stream_idle_s = stream_idle_s
        self.stats = SchedulerStats()
        self._queues: dict[str, dict[Hashable, deque[WorkItem]]] = {}
        self._heap: list[tuple[float, int, int]] = []  # (due, seq, rid), stale entries skipped
        self._queued: dict[int, WorkItem] = {}
        self._in_flight: dict[int, WorkItem] = {}
        self._last_due: dict[Hashable, dict[str, float]] = {}  # stream -> stage -> due
        # stream -> when last seen, oldest first (re-inserted when seen: live_streams() looks
        # at the front only)
        self._last_seen: dict[Hashable, float] = {}
        self._seq = itertools.count()
        self.load_window = LoadWindow(window_s)  # busy spans, work, starts, latencies
        for spec in stages:
            self.add_stage(spec)

    def add_stage(self, spec: StageSpec) -> None:
        self.stages[spec.key] = spec
        self._queues.setdefault(spec.key, {})

    # -- submissions -------------------------------------------------------------------

    def submit(
        self,
        rid: int,
        stream: Hashable,
        stage: str,
        *,
        length: int,
        now: float,
        due: float | None = None,
        payload: Any = None,
        track: bool = True,
        need_by: float | None = None,
    ) -> WorkItem:
        """Queue one call. ``due`` defaults to ``now`` (urgent); a stream's due times per
        stage never go backwards (so EDF keeps its calls in submission order).
        ``need_by``: when the listener runs out of audio without it (default: the due; an
        earlier one is taken as the due), for lateness only (module docs: Late).
        ``track=False``: a one-off call under its own stream id, not counted as a stream
        (live, starts, work; e.g. an acoustic call, which the runner cannot tie to its
        stream), and not to be cancelled."""
        spec = self.stages.get(stage)
        if spec is None:
            raise KeyError(f"unknown stage {stage!r}")
        if length < 1:
            raise ValueError("length must be >= 1")
        spec.length_bucket(length)  # raises when no bucket holds it
        if rid in self._queued or rid in self._in_flight:
            raise ValueError(f"request id {rid} is already pending")
        when = now if due is None else due
        if track:
            dues = self._last_due.setdefault(stream, {})
            when = max(when, dues.get(stage, when))
            dues[stage] = when
            if self._last_seen.pop(stream, None) is None:
                self.load_window.started(stream, now)
            self._last_seen[stream] = now  # at the end: the most recently seen
        need = when if need_by is None else max(need_by, when)
        item = WorkItem(rid, stream, stage, length, when, now, next(self._seq), need, payload)
        self._queues[stage].setdefault(stream, deque()).append(item)
        self._queued[rid] = item
        heapq.heappush(self._heap, (when, item.seq, rid))
        if spec.linger_s > 0.0:
            arrivals = self._arrivals.setdefault(stage, deque())
            arrivals.append(now)
            while arrivals and arrivals[0] <= now - self.linger_window_s:
                arrivals.popleft()
        return item

    def cancel(self, stream: Hashable) -> list[WorkItem]:
        """Drop ``stream``'s queued items (returned) and forget it; results of its items
        on the device are not delivered."""
        dropped: list[WorkItem] = []
        for queues in self._queues.values():
            queue = queues.pop(stream, None)
            if queue:
                dropped.extend(queue)
        for item in dropped:
            del self._queued[item.rid]
        for rid in [r for r, i in self._in_flight.items() if i.stream == stream]:
            del self._in_flight[rid]
        self._last_due.pop(stream, None)
        self._last_seen.pop(stream, None)
        self.load_window.finished(stream)
        self.stats.cancelled += len(dropped)
        return sorted(dropped, key=lambda i: i.seq)

    # -- scheduling --------------------------------------------------------------------

    @property
    def queued(self) -> int:
        return len(self._queued)

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    def streams(self) -> set[Hashable]:
        """Streams with queued or running calls."""
        items = itertools.chain(self._queued.values(), self._in_flight.values())
        return {i.stream for i in items}

    def _head(self) -> WorkItem | None:
        heap = self._heap
        while heap and heap[0][2] not in self._queued:
            heapq.heappop(heap)
        return self._queued[heap[0][2]] if heap else None

    def next_due(self) -> float | None:
        """The most urgent queued item's due time (None when nothing is queued)."""
        head = self._head()
        return None if head is None else head.due

    def close_by(self, item: WorkItem, budget_s: float | None = None) -> float:
        """When ``item``'s batch must be done: its due time, or for an urgent item (due on
        submission) ``budget_s`` after it was submitted (default ``urgent_budget_s``; a held
        batch's: ``linger_budget_s``)."""
        if not item.urgent:
            return item.due
        return item.submitted + (self.urgent_budget_s if budget_s is None else budget_s)

    def schedule(self, now: float) -> Plan | None:
        """The next batch to run (its items leave the queue), or None when none is queued
        or every queued stage is held (then :attr:`wake_at` says when a hold ends)."""
        self.wake_at = None
        head = self._head()
        if head is None:
            return None
        holds: dict[str, tuple[float, float]] = {}  # held stage -> (release, latest start)
        while True:
            hold = self._hold(self.stages[head.stage], now)
            if hold is None:
                break
            holds[head.stage] = hold
            other = self._stage_heads(exclude=holds)
            if other is None:  # nothing else to run: wait for more rows or the release
                self.stats.held += 1
                self.stats.waited += 1
                self.wake_at = min(r for r, _ in holds.values())
                return None
            head = other
        if not holds:
            plan = self._plan(head, now, math.inf)
            assert plan is not None
            return plan
        self.stats.held += 1
        cap = min(latest for _, latest in holds.values()) - now
        plan = self._plan(head, now, cap)
        if plan is None:  # no row of another stage ends before the held one must start
            first = min(holds, key=lambda k: holds[k][1])
            released = self._stage_heads(only=first)
            assert released is not None
            plan = self._plan(released, now, math.inf)
            assert plan is not None
        return plan

    def _stage_heads(
        self, *, exclude: Iterable[str] = (), only: str | None = None
    ) -> WorkItem | None:
        """The most urgent queued item of the stages not in ``exclude`` (or of ``only``)."""
        best: WorkItem | None = None
        for key, queues in self._queues.items():
            if (only is not None and key != only) or key in exclude:
                continue
            for queue in queues.values():
                item = queue[0]
                if best is None or (item.due, item.seq) < (best.due, best.seq):
                    best = item
        return best

    def busy_share(self, now: float, window_s: float) -> float:
        """The share of the last ``window_s`` the device spent on finished plans (plans
        run one at a time; :meth:`load` keeps ``window_s`` of them) and :meth:`note_busy`."""
        return self.load_window.busy_share(now, window_s)

    def _hold(self, spec: StageSpec, now: float) -> tuple[float, float] | None:
        """``(release, latest start)`` when ``spec``'s batch is to be held now, else None
        (see the module docs: Linger)."""
        if spec.linger_s <= 0.0 or self.busy_share(now, self.linger_window_s) < self.linger_busy:
            return None
        items = [i for q in self._queues[spec.key].values() for i in q]
        rows = len(items)
        if not items or rows >= spec.max_batch:
            return None
        length = max(spec.length_bucket(i.length) for i in items)
        full = self.cost.cost(spec.key, spec.max_batch, length) / spec.max_batch
        if self.cost.cost(spec.key, spec.batch_bucket(rows), length) <= LINGER_GAIN * full * rows:
            return None  # big enough: holding would save little
        more = self.cost.cost(spec.key, spec.batch_bucket(rows + 1), length)
        latest = min(self.close_by(i, self.linger_budget_s) for i in items) - more
        release = min(min(i.submitted for i in items) + spec.linger_s, latest)
        if release <= now:
            return None
        arrivals = self._arrivals.get(spec.key, ())
        recent = sum(1 for t in arrivals if t > now - self.linger_window_s)
        if recent / self.linger_window_s * (release - now) < 1.0:
            return None  # no other request likely to come before the release
        return release, latest

    def _plan(self, head: WorkItem, now: float, cap: float) -> Plan | None:
        """The batch ``head`` leads (module docs: Batch), done within ``cap`` seconds
        (None when not even one row is)."""
        spec = self.stages[head.stage]
        queues = self._queues[head.stage]
        # Streams by their first item's (due, seq); seq is unique, so no tie reaches the
        # stream id.
        order = [s for _, _, s in sorted((q[0].due, q[0].seq, s) for s, q in queues.items())]
        first = spec.length_bucket(head.length)
        lengths = [n for n in spec.lengths if n >= first] or [first]
        stage_total = sum(map(len, queues.values()))
        best: tuple[float, list[WorkItem], int, float] | None = None
        slack = self.close_by(head) - now
        late_anyway = self.cost.cost(spec.key, 1, first) > slack
        limit = min(math.inf if late_anyway else slack, cap)
        for bucket in lengths:
            items = self._fill(spec, order, queues, bucket, limit)
            if not items:
                continue  # one row of this length would already eat the head's slack
            length = bucket if spec.lengths else max(i.length for i in items)
            cost = self.cost.cost(spec.key, spec.batch_bucket(len(items)), length)
            score = sum(i.length for i in items) / max(cost, 1e-12)
            if best is None or score > best[0] * (1.0 + 1e-9):
                best = (score, items, length, cost)
            if len(items) in (stage_total, spec.max_batch):
                break  # a longer bucket could only add padding
        if best is None:
            return None
        _, items, length, cost = best
        for item in items:
            queue = queues[item.stream]
            queue.popleft()  # items are taken from the front of each stream's queue
            if not queue:
                del queues[item.stream]
            del self._queued[item.rid]
            self._in_flight[item.rid] = item
        plan = Plan(spec.key, tuple(items), spec.batch_bucket(len(items)), length, cost, now)
        self.stats.plans += 1
        self.stats.items += len(items)
        self.stats.by_stage[spec.key] = self.stats.by_stage.get(spec.key, 0) + 1
        return plan

    def _fill(
        self,
        spec: StageSpec,
        order: list[Hashable],
        queues: dict[Hashable, deque[WorkItem]],
        bucket: int,
        limit: float,
    ) -> list[WorkItem]:
        """Rows for a ``bucket``-long batch: passes over ``order``, one item per stream per
        pass, closed when one more row would take longer than ``limit`` (the head's slack,
        unless the head is late anyway, and a held stage's latest start; module docs)."""
        items: list[WorkItem] = []
        taken: dict[Hashable, int] = {}  # items taken per stream (none: 0)
        blocked: set[Hashable] = set()
        fits = 0  # the largest padded batch known to end within limit
        while len(items) < spec.max_batch:
            progressed = False
            for stream in order:
                if stream in blocked:
                    continue
                queue, k = queues[stream], taken.get(stream, 0)
                if k >= len(queue) or spec.length_bucket(queue[k].length) > bucket:
                    blocked.add(stream)
                    continue
                if limit < math.inf:
                    rows = spec.batch_bucket(len(items) + 1)
                    if rows > fits:  # the cost of a padded batch is asked once per size
                        if self.cost.cost(spec.key, rows, bucket) > limit:
                            return items  # one more row would eat the head's slack
                        fits = rows
                items.append(queue[k])
                taken[stream] = k + 1
                progressed = True
                if len(items) >= spec.max_batch:
                    break
            if not progressed:
                break
        return items

    def complete(self, plan: Plan, now: float) -> list[Delivery]:
        """``plan`` ran from ``plan.started`` to ``now``: its deliveries (items of streams
        cancelled meanwhile left out)."""
        row = self.row_cost(plan.stage, plan.length)
        self.load_window.ran(plan.started, now, row * len(plan.items))
        self.stats.busy_s += now - plan.started
        out: list[Delivery] = []
        for item in plan.items:
            if self._in_flight.pop(item.rid, None) is None:
                continue  # cancelled while on the device
            late = not item.urgent and now > item.need_by
            if late:
                self.stats.late += 1
            urgent_s = now - item.submitted if item.urgent else None
            self.load_window.delivered(item.stream, now, row, urgent_s=urgent_s, late=late)
            if self._last_seen.pop(item.stream, None) is not None:
                self._last_seen[item.stream] = now  # moved to the end: the most recent
            out.append(Delivery(item.rid, item.stream, now - item.submitted, late))
        return out

    def note_busy(self, start: float, end: float) -> None:
        """The I/O layer's own work outside plans (taking in calls, delivering results),
        ``start`` to ``end`` on the scheduler's clock: counted in the busy share (the
        linger's test, :meth:`load`'s ``busy_fraction``) like a plan, since the engine loop
        runs one thing at a time. Without it a loop kept busy by host work reads as idle, the
        linger never holds and batches stay small (measured: docs/measurements.md, "Engine
        scheduler and loop")."""
        if end > start:
            self.load_window.add_busy(start, end)

    def fail(self, plan: Plan) -> list[WorkItem]:
        """``plan`` failed on the device: its items that still wait (returned)."""
        return [i for i in plan.items if self._in_flight.pop(i.rid, None) is not None]

    # -- load ---------------------------------------------------------------------------

    def row_cost(self, stage: str, length: int) -> float:
        """One row's share of a full batch of ``length``: what a stream's call costs when
        the device is saturated (batches fill up), so the demand of the live streams."""
        spec = self.stages[stage]
        return self.cost.cost(stage, spec.max_batch, length) / spec.max_batch

    def live_streams(self, now: float) -> int:
        """Streams seen within ``stream_idle_s`` and not cancelled (idle streams with queued
        calls stay). ``_last_seen`` is oldest first, so only its front is looked at."""
        idle = []
        for stream, seen in self._last_seen.items():
            if now - seen <= self.stream_idle_s:
                break  # this one and every later one are live
            idle.append(stream)
        for stream in idle:
            if not any(stream in q for q in self._queues.values()):
                del self._last_seen[stream]
        return len(self._last_seen)

    def load(self, now: float) -> LoadSnapshot:
        """The load at ``now`` (not before any earlier call's ``now``: the window's deques
        are trimmed at the front, and plans run one at a time, in order)."""
        live = self.live_streams(now)
        return self.load_window.snapshot(now, live_streams=live, queued=len(self._queued))
