"""Statistics (sans-I/O): percentiles and a mergeable sparse histogram."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in [0, 1]); NaN for no values."""
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be in [0, 1]")
    s = sorted(values)
    if not s:
        return math.nan
    k = (len(s) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _r(x: float, nd: int = 1) -> float | None:
    return None if math.isnan(x) else round(x, nd)


def summary(values: Iterable[float], *, digits: int = 1) -> dict[str, float | int | None]:
    """``n``, ``mean``, ``p50``, ``p95``, ``p99``, ``max`` of ``values`` (None where empty)."""
    v = [float(x) for x in values]
    if not v:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    return {
        "n": len(v),
        "mean": _r(sum(v) / len(v), digits),
        "p50": _r(percentile(v, 0.5), digits),
        "p95": _r(percentile(v, 0.95), digits),
        "p99": _r(percentile(v, 0.99), digits),
        "max": _r(max(v), digits),
    }


@dataclass
class Histogram:
    """Counts of values in bins of ``resolution`` (default 0.1, e.g. ms): mergeable, small
    (one entry per distinct bin), so per-packet figures need no per-packet storage."""

    resolution: float = 0.1
    bins: dict[int, int] = field(default_factory=dict)

    def add(self, value: float) -> None:
        key = round(value / self.resolution)
        self.bins[key] = self.bins.get(key, 0) + 1

    def merge(self, other: Histogram) -> None:
        if other.resolution != self.resolution:
            raise ValueError("histograms of different resolutions")
        for k, n in other.bins.items():
            self.bins[k] = self.bins.get(k, 0) + n

    @property
    def count(self) -> int:
        return sum(self.bins.values())

    def quantile(self, q: float) -> float:
        """Nearest-rank quantile (a bin centre); NaN when empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError("q must be in [0, 1]")
        total = self.count
        if total == 0:
            return math.nan
        rank = max(1, math.ceil(q * total))
        seen = 0
        for k in sorted(self.bins):
            seen += self.bins[k]
            if seen >= rank:
                return k * self.resolution
        return max(self.bins) * self.resolution  # pragma: no cover (unreachable)

    def summary(self, *, digits: int = 1) -> dict[str, float | int | None]:
        if not self.bins:
            return {"n": 0, "p50": None, "p99": None, "max": None}
        return {
            "n": self.count,
            "p50": _r(self.quantile(0.5), digits),
            "p99": _r(self.quantile(0.99), digits),
            "max": _r(max(self.bins) * self.resolution, digits),
        }

    def to_dict(self) -> dict[str, object]:
        return {"resolution": self.resolution, "bins": {str(k): n for k, n in self.bins.items()}}

    @classmethod
    def from_dict(cls, d: Mapping[str, object]) -> Histogram:
        res = d.get("resolution", 0.1)
        raw = d.get("bins", {})
        assert isinstance(res, (int, float)) and isinstance(raw, dict)
        return cls(float(res), {int(k): int(v) for k, v in raw.items()})
