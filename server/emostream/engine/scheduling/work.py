"""What the engine scheduler (:mod:`emostream.engine.scheduling.scheduler`) works on: the
batched stages it knows, the cost model it asks, the queued calls, the batches it plans,
the deliveries it hands back and its counters."""

from __future__ import annotations

import bisect
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class StageSpec:
    """A batched stage: ``batch_sizes`` ascending (padded rows); ``lengths``: padded
    length buckets (ascending), or empty when the executor takes any lengths unpadded."""

    key: str
    batch_sizes: tuple[int, ...] = (1,)
    lengths: tuple[int, ...] = ()
    linger_s: float = 0.0  # hold small batches under load up to this long (module docs)

    def __post_init__(self) -> None:
        if not self.linger_s >= 0.0:
            raise ValueError(f"StageSpec.linger_s must be >= 0: {self.linger_s}")
        for name, values in (("batch_sizes", self.batch_sizes), ("lengths", self.lengths)):
            if list(values) != sorted(set(values)) or (values and values[0] < 1):
                raise ValueError(f"StageSpec.{name} must be ascending positive ints: {values}")
        if not self.batch_sizes:
            raise ValueError("StageSpec.batch_sizes must not be empty")

    @property
    def max_batch(self) -> int:
        return self.batch_sizes[-1]

    def batch_bucket(self, rows: int) -> int:
        i = bisect.bisect_left(self.batch_sizes, rows)
        if i == len(self.batch_sizes):
            raise ValueError(f"batch of {rows} exceeds {self.max_batch}")
        return self.batch_sizes[i]

    def length_bucket(self, length: int) -> int:
        """The padded length of an item (itself when the stage has no length buckets)."""
        if not self.lengths:
            return length
        i = bisect.bisect_left(self.lengths, length)
        if i == len(self.lengths):
            raise ValueError(f"{self.key}: length {length} exceeds {self.lengths[-1]}")
        return self.lengths[i]


class CostModel(Protocol):
    def cost(self, stage: str, batch: int, length: int) -> float:
        """Seconds of device time for one padded batch ``batch x length`` of ``stage``."""
        ...


@dataclass(frozen=True)
class WorkItem:
    rid: int  # request id, unique per scheduler (the caller's)
    stream: Hashable
    stage: str
    length: int  # units or frames before padding
    due: float
    submitted: float
    seq: int  # global submission order (ties)
    # when the listener runs out without it (late only after it); never before ``due``
    need_by: float = field(compare=False)
    payload: Any = field(default=None, compare=False)

    @property
    def urgent(self) -> bool:
        """Submitted with no slack: the listener has nothing buffered (a first chunk)."""
        return self.due <= self.submitted


@dataclass(frozen=True)
class Plan:
    stage: str
    items: tuple[WorkItem, ...]
    batch: int  # padded rows (a bucket)
    length: int  # padded length
    cost_s: float  # the cost model's estimate
    started: float


@dataclass(frozen=True)
class Delivery:
    rid: int
    stream: Hashable
    latency_s: float  # submitted -> delivered
    late: bool  # delivered after ``need_by`` (default ``due``; never for urgent items)


@dataclass
class SchedulerStats:
    plans: int = 0
    items: int = 0
    late: int = 0
    cancelled: int = 0
    busy_s: float = 0.0
    by_stage: dict[str, int] = field(default_factory=dict)  # plans per stage
    held: int = 0  # schedule() calls that held a lingering stage (ran another or waited)
    waited: int = 0  # ... of which returned None (nothing else to run)
