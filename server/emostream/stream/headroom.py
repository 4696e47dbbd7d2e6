"""A front end's own headroom: how late its event loop runs (sans-I/O, and one thin ticker).

The engine process's admission (:mod:`emostream.engine.admission`) sees the device and the
engine's loop; it does not see the front ends. On one H100 host (2026-12-07, issue 41) the
ceiling past 1,000 streams was the front ends' CPU, not the GPU: the engine kept admitting,
and the admitted streams' first audio went to ~940 ms with underruns. A front end whose event
loop is late is late for every stream it holds (it encodes and sends every packet), so it
should take no new utterance until it has caught up.

:class:`LoopLag` keeps the loop's lag samples over a sliding window; :func:`decide` refuses a
new utterance while their p95 is past the bound (and never while fewer than ``min_samples``
were seen: an idle loop has nothing to say). :func:`tick` is the asyncio side: it sleeps a
``period_s`` at a time and reports how much later than asked it woke. Nothing here reads a
clock except :func:`tick`, which is given one.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from emostream.engine.admission import Decision, Verdict
from emostream.engine.scheduling.load import nearest_rank

TICK_S = 0.02  # the ticker's sleep: 50 samples a second


@dataclass
class LoopLag:
    """Lag samples (seconds a sleep overran) within the last ``window_s``."""

    window_s: float = 1.0
    _samples: deque[tuple[float, float]] = field(default_factory=deque)

    def observe(self, now: float, lag_s: float) -> None:
        self._samples.append((now, max(0.0, lag_s)))
        self._trim(now)

    def _trim(self, now: float) -> None:
        while self._samples and self._samples[0][0] < now - self.window_s:
            self._samples.popleft()

    def count(self, now: float) -> int:
        self._trim(now)
        return len(self._samples)

    def p95(self, now: float) -> float:
        """The 95th percentile of the window's lag (0 with no samples)."""
        self._trim(now)
        return nearest_rank(sorted(lag for _, lag in self._samples), 0.95)


@dataclass(frozen=True)
class HeadroomPolicy:
    """``bound_s``: the loop's p95 lag past which new utterances are refused (0: never);
    ``retry_after_s``: what a refusal tells the client (the window, by then renewed)."""

    bound_s: float = 0.05
    min_samples: int = 10
    retry_after_s: float = 1.0


def decide(lag: LoopLag, policy: HeadroomPolicy, now: float) -> Decision:
    """Admit one more utterance on this front end? Reason ``front_end`` when refused."""
    p95 = lag.p95(now)
    if policy.bound_s <= 0 or lag.count(now) < policy.min_samples or p95 <= policy.bound_s:
        return Decision(Verdict.ADMIT, "", 0.0, p95)
    return Decision(Verdict.REFUSE, "front_end", 0.0, p95, retry_after_s=policy.retry_after_s)


async def tick(
    lag: LoopLag,
    *,
    period_s: float = TICK_S,
    clock: Callable[[], float] = time.monotonic,
    report: Callable[[float], None] | None = None,
) -> None:
    """Forever: sleep ``period_s`` and record how late the loop woke (``report`` also gets
    each lag, e.g. a metric). Cancel it to stop."""
    while True:
        asked = clock() + period_s
        await asyncio.sleep(period_s)
        now = clock()
        lag.observe(now, now - asked)
        if report is not None:
            report(max(0.0, now - asked))
