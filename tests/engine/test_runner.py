import asyncio
import threading

import pytest

from emostream.engine.runner import ThreadRunner


async def test_earliest_deadline_first() -> None:
    runner = ThreadRunner(workers=1)
    gate = threading.Event()
    order: list[str] = []
    blocker = asyncio.ensure_future(runner.run(gate.wait))
    await asyncio.sleep(0.05)  # the single worker is now busy
    tasks = [
        asyncio.ensure_future(runner.run(lambda n=name: order.append(n), deadline=due))  # type: ignore[misc]
        for name, due in (("late", 30.0), ("urgent", 10.0), ("middle", 20.0))
    ]
    await asyncio.sleep(0.05)
    assert runner.pending() == 3
    gate.set()
    await asyncio.gather(blocker, *tasks)
    assert order == ["urgent", "middle", "late"]
    runner.close()


async def test_errors_reach_the_caller_and_the_worker_survives() -> None:
    runner = ThreadRunner(workers=1)

    def boom() -> None:
        raise ValueError("bad model call")

    with pytest.raises(ValueError, match="bad model call"):
        await runner.run(boom)
    assert await runner.run(lambda: 42) == 42
    runner.close()


async def test_cancelled_calls_are_skipped_and_close_cancels_the_queue() -> None:
    runner = ThreadRunner(workers=1)
    gate = threading.Event()
    ran: list[int] = []
    blocker = asyncio.ensure_future(runner.run(gate.wait))
    await asyncio.sleep(0.05)
    skipped = asyncio.ensure_future(runner.run(lambda: ran.append(1)))
    queued = asyncio.ensure_future(runner.run(lambda: ran.append(2), deadline=1e12))
    await asyncio.sleep(0.05)
    skipped.cancel()
    await asyncio.sleep(0.01)
    runner.close()
    gate.set()
    await blocker
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert ran == []
    with pytest.raises(RuntimeError):
        await runner.run(lambda: None)


async def test_join_waits_for_the_running_call_after_close() -> None:
    runner = ThreadRunner(workers=2)
    gate = threading.Event()
    running = asyncio.ensure_future(runner.run(gate.wait))
    await asyncio.sleep(0.05)
    runner.close()
    assert runner.join(0.1) is False  # the call still runs: its thread with it
    threading.Timer(0.2, gate.set).start()
    assert await asyncio.to_thread(runner.join, 5.0) is True
    await running
