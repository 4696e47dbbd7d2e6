"""Always-on counters of the engine loop (:mod:`emostream.engine.core`).

The engine process is one thread: it waits on its sockets, takes the calls they brought,
schedules one batch, executes it (pads the rows, runs the stage, slices the results) and
delivers the results. :class:`EngineStats` adds up where that thread's wall time goes and
what the batches were, per interval, so that a server log of a loaded GPU run says whether
the device or the host work around it is the limit:

* ``loop``: iterations (``idle``: nothing came and nothing ran), the thread's seconds by
  part (``wait_s``: blocked in ``select`` with nothing queued; ``poll_s``: ``select``
  while work was queued; ``intake_s``: receiving, unpickling and queueing calls;
  ``schedule_s``, ``prep_s`` (padding), ``run_s`` (the stage's call: the device and its
  own host work, e.g. the backend's copies and sync), ``post_s`` (slicing the results),
  ``deliver_s`` (slot writes and answers), ``publish_s`` (the load for admission) and
  ``other_s`` (the rest of the interval)), ``host_s`` (the step outside ``run_s``:
  schedule + prep + post + deliver), ``busy`` (share of the interval not waiting),
  messages in and out, bytes in, the queue's mean and max depth as each iteration saw it;
* per stage: batches, items, padded rows, batch sizes (mean, p50, p95, max and a histogram
  of items per batch), padded lengths, fill (real cells over padded cells), seconds by part
  and per batch, items delivered late, and the wait of items submitted -> delivered (all;
  urgent ones: first chunks and acoustic calls).

:meth:`EngineStats.report` returns one interval as a dict (JSON-ready) and starts the next.
The cost: a few ``perf_counter`` calls per loop iteration and one append per item.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from emostream.engine.scheduling.load import nearest_rank


def _wait_ms(waits: list[float]) -> dict[str, float]:
    """Count, p50, p95 and max of ``waits`` (seconds), in ms."""
    xs = sorted(waits)
    return {
        "n": len(xs),
        "p50": round(1e3 * nearest_rank(xs, 0.5), 2),
        "p95": round(1e3 * nearest_rank(xs, 0.95), 2),
        "max": round(1e3 * (xs[-1] if xs else 0.0), 2),
    }


def _hist_pct(hist: Counter[int], q: float) -> int:
    """The ``q`` quantile of the values counted in ``hist``."""
    total = sum(hist.values())
    if not total:
        return 0
    rank, seen = max(1, math.ceil(q * total)), 0
    for value in sorted(hist):
        seen += hist[value]
        if seen >= rank:
            return value
    return max(hist)


@dataclass
class StageCounters:
    batches: int = 0
    items: int = 0
    rows: int = 0  # padded rows
    real_cells: int = 0  # sum of the items' lengths
    padded_cells: int = 0  # rows x padded length
    late: int = 0
    failed: int = 0
    schedule_s: float = 0.0
    prep_s: float = 0.0
    run_s: float = 0.0
    post_s: float = 0.0
    deliver_s: float = 0.0
    sizes: Counter[int] = field(default_factory=Counter)  # items per batch
    lengths: Counter[int] = field(default_factory=Counter)  # padded length per batch
    waits: list[float] = field(default_factory=list)  # submitted -> delivered, s
    urgent_waits: list[float] = field(default_factory=list)

    def report(self, seconds: float) -> dict[str, Any]:
        b = max(self.batches, 1)
        host = self.schedule_s + self.prep_s + self.post_s + self.deliver_s
        return {
            "batches": self.batches,
            "items": self.items,
            "items_per_s": round(self.items / seconds, 1),
            "batch_mean": round(self.items / b, 2),
            "batch_p50": _hist_pct(self.sizes, 0.5),
            "batch_p95": _hist_pct(self.sizes, 0.95),
            "batch_max": max(self.sizes, default=0),
            "rows_padded": self.rows,
            "fill": round(self.real_cells / self.padded_cells, 3) if self.padded_cells else 0.0,
            "sizes": {str(k): self.sizes[k] for k in sorted(self.sizes)},
            "lengths": {str(k): self.lengths[k] for k in sorted(self.lengths)},
            "run_s": round(self.run_s, 4),
            "host_s": round(host, 4),
            "run_ms_per_batch": round(1e3 * self.run_s / b, 3),
            "host_ms_per_batch": round(1e3 * host / b, 3),
            "host_us_per_item": round(1e6 * host / max(self.items, 1), 1),
            "parts_ms_per_batch": {
                "schedule": round(1e3 * self.schedule_s / b, 3),
                "prep": round(1e3 * self.prep_s / b, 3),
                "post": round(1e3 * self.post_s / b, 3),
                "deliver": round(1e3 * self.deliver_s / b, 3),
            },
            "late": self.late,
            "failed": self.failed,
            "wait_ms": _wait_ms(self.waits),
            "urgent_wait_ms": _wait_ms(self.urgent_waits),
        }


class EngineStats:
    """See the module docs. ``clock``: wall seconds (``time.perf_counter``)."""

    PARTS = ("wait", "poll", "intake", "schedule", "prep", "run", "post", "deliver", "publish")

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.total_batches = 0
        self.total_items = 0
        # By part of the loop; zeroed in place by each report (the loop holds a reference).
        self.seconds = dict.fromkeys(self.PARTS, 0.0)
        self._reset(clock())

    def _reset(self, now: float) -> None:
        self.started = now
        self.iterations = 0
        self.idle = 0
        for part in self.PARTS:
            self.seconds[part] = 0.0
        self.msgs_in = 0
        self.msgs_out = 0
        self.bytes_in = 0
        self.calls_in: Counter[str] = Counter()
        self.cancels = 0
        self.queued_sum = 0
        self.queued_max = 0
        self.stages: dict[str, StageCounters] = {}

    def stage(self, key: str) -> StageCounters:
        s = self.stages.get(key)
        if s is None:
            s = self.stages[key] = StageCounters()
        return s

    def iteration(self, queued: int, idle: bool) -> None:
        self.iterations += 1
        self.idle += idle
        self.queued_sum += queued
        self.queued_max = max(self.queued_max, queued)

    def batch(
        self,
        key: str,
        *,
        items: int,
        rows: int,
        length: int,
        real_cells: int,
        schedule_s: float,
        prep_s: float,
        run_s: float,
        post_s: float,
        deliver_s: float,
    ) -> StageCounters:
        s = self.stage(key)
        s.batches += 1
        s.items += items
        s.rows += rows
        s.real_cells += real_cells
        s.padded_cells += rows * length
        s.sizes[items] += 1
        s.lengths[length] += 1
        s.schedule_s += schedule_s
        s.prep_s += prep_s
        s.run_s += run_s
        s.post_s += post_s
        s.deliver_s += deliver_s
        sec = self.seconds
        sec["schedule"] += schedule_s
        sec["prep"] += prep_s
        sec["run"] += run_s
        sec["post"] += post_s
        sec["deliver"] += deliver_s
        self.total_batches += 1
        self.total_items += items
        return s

    def report(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """This interval as a dict (see the module docs); the next interval starts now."""
        now = self.clock()
        wall = max(now - self.started, 1e-9)
        sec = self.seconds
        parts = {f"{k}_s": round(v, 4) for k, v in sec.items()}
        parts["other_s"] = round(max(0.0, wall - sum(sec.values())), 4)
        host = sec["schedule"] + sec["prep"] + sec["post"] + sec["deliver"]
        out: dict[str, Any] = {
            "interval_s": round(wall, 3),
            "loop": {
                "iterations": self.iterations,
                "idle": self.idle,
                "iterations_per_s": round(self.iterations / wall, 1),
                **parts,
                "host_s": round(host, 4),
                "busy": round(1.0 - sec["wait"] / wall, 3),
                "run_share": round(sec["run"] / wall, 3),
                "msgs_in": self.msgs_in,
                "msgs_out": self.msgs_out,
                "bytes_in": self.bytes_in,
                "calls_in": dict(self.calls_in),
                "cancels": self.cancels,
                "queued_mean": round(self.queued_sum / max(self.iterations, 1), 1),
                "queued_max": self.queued_max,
            },
            "stages": {k: s.report(wall) for k, s in sorted(self.stages.items())},
            "totals": {"batches": self.total_batches, "items": self.total_items},
        }
        if extra:
            out.update(extra)
        self._reset(now)
        return out
