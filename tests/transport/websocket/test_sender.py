"""The bounded sender's watchdog, sans I/O: which audio frame has waited too long."""

from __future__ import annotations

import asyncio

from emostream.transport.websocket.sender import FrameWatch


async def test_a_frame_is_overdue_at_the_limit_and_not_before() -> None:
    watch = FrameWatch(limit_s=2.0)
    task = asyncio.create_task(asyncio.sleep(0))
    assert watch.overdue(100.0) is None  # nothing in flight
    watch.begin(task, now=10.0)
    assert watch.overdue(11.9) is None
    assert watch.overdue(12.0) is task
    watch.end()
    assert watch.overdue(50.0) is None
    await task


def test_the_watchdog_wakes_every_quarter_limit_and_never_busily() -> None:
    assert FrameWatch(limit_s=8.0).period_s == 2.0
    assert FrameWatch(limit_s=0.0).period_s == 0.05
