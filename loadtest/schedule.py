"""Arrival schedules (sans-I/O): when each utterance starts, and when each token is sent.

``steady`` is closed loop (each of N streams starts its next utterance when the last one
has played out) and needs no schedule; ``poisson`` and ``danmaku`` are open loop and
produce a list of start offsets (seconds from the run's start), bounded in count and time.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Arrival:
    at_s: float  # offset from the start of the run
    index: int  # running number; picks the text


def poisson_arrivals(
    *, rate_hz: float, duration_s: float, rng: random.Random, max_count: int = 100_000
) -> list[Arrival]:
    """Open-loop Poisson arrivals at ``rate_hz`` over ``[0, duration_s)``, at most ``max_count``."""
    if rate_hz <= 0 or duration_s <= 0:
        raise ValueError("rate_hz and duration_s must be > 0")
    out: list[Arrival] = []
    t = rng.expovariate(rate_hz)
    while t < duration_s and len(out) < max_count:
        out.append(Arrival(t, len(out)))
        t += rng.expovariate(rate_hz)
    return out


def burst_arrivals(
    *,
    burst_size: int,
    interval_s: float,
    duration_s: float,
    spread_s: float = 0.0,
    rng: random.Random | None = None,
    max_count: int = 100_000,
) -> list[Arrival]:
    """Danmaku bursts: ``burst_size`` utterances every ``interval_s`` from t=0, each offset
    uniformly within ``[0, spread_s]`` of its burst (0 = all at once). Sorted by time."""
    if burst_size < 1 or interval_s <= 0 or duration_s <= 0 or spread_s < 0:
        raise ValueError("burst_size >= 1, interval_s > 0, duration_s > 0, spread_s >= 0")
    rng = rng or random.Random(0)
    times: list[float] = []
    burst = 0
    while burst * interval_s < duration_s and len(times) < max_count:
        base = burst * interval_s
        for _ in range(min(burst_size, max_count - len(times))):
            times.append(base + (rng.uniform(0.0, spread_s) if spread_s else 0.0))
        burst += 1
    times.sort()
    return [Arrival(t, i) for i, t in enumerate(times)]


def token_times(tokens: list[str], *, tokens_per_s: float) -> list[float]:
    """Send offsets for token-by-token feeding: token k at ``k / tokens_per_s`` seconds
    (0 or less: all at once)."""
    if tokens_per_s <= 0:
        return [0.0] * len(tokens)
    return [k / tokens_per_s for k in range(len(tokens))]
