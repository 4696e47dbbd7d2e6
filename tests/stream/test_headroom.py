"""A front end's own headroom: its event loop's lag refuses new utterances (stream.headroom)."""

from __future__ import annotations

import asyncio
import time

import pytest

from emostream.config import Settings
from emostream.engine.admission import Verdict
from emostream.stream.headroom import HeadroomPolicy, LoopLag, decide, tick
from emostream.stream.service import Busy, SpeechService
from emostream.voices.catalog import VoiceCatalog


def _lag(samples: list[float], *, t0: float = 100.0) -> LoopLag:
    lag = LoopLag(window_s=1.0)
    for i, s in enumerate(samples):
        lag.observe(t0 + i * 0.02, s)
    return lag


def test_p95_over_the_window_only() -> None:
    lag = _lag([0.001] * 19 + [0.2])
    now = 100.0 + 19 * 0.02
    assert lag.p95(now) == pytest.approx(0.001)  # one slow tick in twenty is the top 5 %
    lag = _lag([0.001] * 10 + [0.2] * 10)
    assert lag.p95(now) == pytest.approx(0.2)
    assert lag.p95(now + 5.0) == 0.0 and lag.count(now + 5.0) == 0  # the window moved on


def test_decide_refuses_past_the_bound_and_says_when_to_retry() -> None:
    policy = HeadroomPolicy(bound_s=0.05, retry_after_s=0.7)
    late = _lag([0.08] * 20)
    d = decide(late, policy, 100.4)
    assert d.verdict is Verdict.REFUSE and d.reason == "front_end" and d.retry_after_s == 0.7
    assert decide(_lag([0.01] * 20), policy, 100.4).admitted
    assert decide(_lag([0.5] * 3), policy, 100.04).admitted  # too few samples to judge
    assert decide(late, HeadroomPolicy(bound_s=0.0), 100.4).admitted  # off


async def test_tick_sees_a_blocked_loop() -> None:
    lag = LoopLag()
    task = asyncio.get_running_loop().create_task(tick(lag, period_s=0.01))
    await asyncio.sleep(0.05)
    time.sleep(0.12)  # the loop held: the ticker wakes ~0.12 s late
    await asyncio.sleep(0.03)
    task.cancel()
    assert max(s for _, s in lag._samples) > 0.08


async def test_service_refuses_before_the_runner_while_its_loop_is_late() -> None:
    service = SpeechService(Settings(engine="process"), VoiceCatalog())
    try:
        service.watch_loop()
        now = time.monotonic()
        for i in range(20):
            service.loop_lag.observe(now - 0.4 + i * 0.02, 0.09)
        with pytest.raises(Busy) as err:
            service.admit()
        assert "front end" in str(err.value) and err.value.retry_after_s == 1.0
        assert service.active == 0
        off = SpeechService(Settings(engine="process", frontend_loop_lag_bound_ms=0), VoiceCatalog())
        off.watch_loop()
        for i in range(20):
            off.loop_lag.observe(now - 0.4 + i * 0.02, 0.09)
        off.admit().release()
        await off.aclose()
    finally:
        await service.aclose()
