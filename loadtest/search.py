"""``--find-max`` (sans-I/O): the largest concurrency that still meets the targets.

Doubling from ``start`` until a level fails (or ``limit`` is reached), then bisecting
between the last good and the first bad level until they are within ``resolution``
(an absolute count, or a fraction of the good level, whichever is larger).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class MaxSearch:
    start: int = 1
    limit: int = 4096
    resolution: int = 1  # stop bisecting when bad - good <= max(resolution, rel * good)
    relative_resolution: float = 0.1
    max_steps: int = 32
    tried: dict[int, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= self.start <= self.limit:
            raise ValueError("need 1 <= start <= limit")
        if self.resolution < 1:
            raise ValueError("resolution must be >= 1")

    @property
    def best(self) -> int:
        """Largest good level so far (0 when none)."""
        good = [n for n, ok in self.tried.items() if ok]
        return max(good, default=0)

    @property
    def first_bad(self) -> int | None:
        bad = [n for n, ok in self.tried.items() if not ok and n > self.best]
        return min(bad, default=None)

    def next_level(self) -> int | None:
        """The next concurrency to try, or None when the search is over."""
        if len(self.tried) >= self.max_steps:
            return None
        if not self.tried:
            return self.start
        good, bad = self.best, self.first_bad
        if bad is None:
            if good == 0 or good >= self.limit:
                return None  # start failed (nothing lower to try) or the limit holds
            return min(good * 2, self.limit)
        tolerance = max(self.resolution, int(self.relative_resolution * good))
        if bad - good <= tolerance:
            return None
        if good == 0:
            return None if bad <= self.start else self.start
        return (good + bad) // 2

    def record(self, level: int, good: bool) -> None:
        self.tried[level] = good
