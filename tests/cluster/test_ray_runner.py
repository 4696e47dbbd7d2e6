"""RayRunner without Ray: fake deployment handles stand in for Serve's (sessions that report
a replica and its load, calls that record their pinning), so placement, pinning, loss and
admission are checked in milliseconds. The cluster tests run the real thing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import numpy as np
import pytest

from emostream.cluster.ray_runner import MODEL, RayRunner, ReplicaLost
from emostream.engine.admission import Verdict
from emostream.voices.base import Controls, Latent, VoiceInfo


class FakeSession:
    def __init__(self, first: dict[str, Any]) -> None:
        self.reports: asyncio.Queue[dict[str, Any] | BaseException] = asyncio.Queue()
        self.reports.put_nowait(first)
        self.cancelled = False

    def __aiter__(self) -> FakeSession:
        return self

    async def __anext__(self) -> dict[str, Any]:
        item = await self.reports.get()
        if isinstance(item, BaseException):
            raise item
        return item

    def cancel(self) -> None:
        self.cancelled = True
        self.reports.put_nowait(RuntimeError("RequestCancelledError"))


class FakeMethod:
    def __init__(self, handle: FakeHandle, name: str) -> None:
        self.handle, self.name = handle, name

    def remote(self, *args: Any, **kwargs: Any) -> Any:
        if self.name == "session":
            replica = self.handle.replicas[len(self.handle.sessions) % len(self.handle.replicas)]
            full = kwargs.get("force") is False and replica in self.handle.full
            first = {"replica": replica, "node": f"node-{replica}", "streams": 1, "cap": 1,
                     **({"refused": "full"} if full else {})}  # fmt: skip
            session = FakeSession(first)
            self.handle.sessions.append((args, kwargs, session))
            return session
        self.handle.calls.append((self.name, kwargs))

        async def answer() -> Any:
            if self.name == "acoustic":
                return Latent(np.zeros((80, 4), np.float32), np.ones(1, np.int64), ["a"])
            return np.zeros(1024, np.float32)

        return answer()


class FakeHandle:
    def __init__(self, replicas: list[str], full: set[str] | None = None) -> None:
        self.replicas = replicas
        self.full = full or set()
        self.sessions: list[tuple[Any, dict[str, Any], FakeSession]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def options(self, **_: Any) -> FakeHandle:
        return self

    def __getattr__(self, name: str) -> FakeMethod:
        return FakeMethod(self, name)


class FakeVoice:
    info = VoiceInfo("af_heart", "emostream", "en", 22050, (), "stock")


async def _streamer(runner: RayRunner, stream: str, gate: asyncio.Event) -> AsyncIterator[int]:
    """Like the streamer: acoustic from a look-ahead task, decode from the consumer."""
    voice: Any = FakeVoice()
    ahead = asyncio.create_task(runner.acoustic(voice, "hi", Controls()))
    await ahead
    yield 1
    await runner.decode(voice, np.zeros((80, 4), np.float32), stream_id=stream)
    yield 2
    await gate.wait()  # waiting for text
    yield 3


async def test_a_stream_is_pinned_to_its_sessions_replica() -> None:
    handle = FakeHandle(["r1", "r2"])
    runner = RayRunner(handle)
    gate = asyncio.Event()
    gate.set()
    out = [x async for x in runner.bind("s1", _streamer(runner, "s1", gate))]
    assert out == [1, 2, 3]
    assert [(n, k.get("replica"), k.get("stream")) for n, k in handle.calls] == [
        ("acoustic", "r1", "s1"),
        ("decode", "r1", "s1"),
    ]
    (_, _, session), = handle.sessions  # fmt: skip
    assert session.cancelled  # closed with the stream
    await asyncio.sleep(0)
    assert runner.lost == 0 and runner.placements() == {}


async def test_a_lost_replica_ends_a_waiting_stream_at_once() -> None:
    handle = FakeHandle(["r1"])
    runner = RayRunner(handle)
    gate = asyncio.Event()  # never set: the stream waits for text
    got: list[int] = []

    async def consume() -> None:
        async for x in runner.bind("s1", _streamer(runner, "s1", gate)):
            got.append(x)

    task = asyncio.create_task(consume())
    while len(got) < 2:
        await asyncio.sleep(0.001)
    (_, _, session), = handle.sessions  # fmt: skip
    t0 = time.monotonic()
    session.reports.put_nowait(RuntimeError("ActorDiedError"))
    with pytest.raises(ReplicaLost, match="r1"):
        await asyncio.wait_for(task, 1.0)
    assert time.monotonic() - t0 < 0.1
    assert runner.lost == 1 and "r1" not in runner.loads


async def test_a_full_replica_is_asked_again_with_force() -> None:
    handle = FakeHandle(["r1"], full={"r1"})
    runner = RayRunner(handle)
    gate = asyncio.Event()
    gate.set()
    assert [x async for x in runner.bind("s1", _streamer(runner, "s1", gate))] == [1, 2, 3]
    assert [k["force"] for _, k, _ in handle.sessions] == [False, True]


def test_admission_degrades_only_when_every_replica_is_known_full() -> None:
    now = [100.0]
    report = {"streams": 2, "cap": 2, "node": "n"}
    busy = RayRunner(object(), max_replicas=2, clock=lambda: now[0])
    busy.note({**report, "replica": "r1"}, MODEL)
    assert busy.admit().verdict is Verdict.ADMIT  # a second replica may still come
    busy.note({**report, "replica": "r2"}, MODEL)
    decision = busy.admit()
    assert decision.verdict is Verdict.REFUSE and decision.reason == "replicas_full"
    lite = RayRunner(object(), lite=object(), max_replicas=2, clock=lambda: now[0])
    for r in ("r1", "r2"):
        lite.note({**report, "replica": r}, MODEL)
    assert lite.admit().verdict is Verdict.LITE
    now[0] += 6.0  # reports gone stale: no longer known full
    assert lite.admit().verdict is Verdict.ADMIT
    # room for one: admitted, and counted until the replicas report again
    room = RayRunner(object(), max_replicas=1, clock=lambda: now[0])
    room.note({"streams": 1, "cap": 2, "node": "n", "replica": "r1"}, MODEL)
    now[0] += 0.1
    assert room.admit().verdict is Verdict.ADMIT
    assert room.admit().verdict is Verdict.REFUSE


async def test_need_by_goes_to_the_replica_as_seconds_from_now() -> None:
    """As the deadline (clocks differ between hosts): ``need_in``; none when not given."""
    handle = FakeHandle(["r1"])
    runner = RayRunner(handle, clock=lambda: 50.0)
    voice: Any = FakeVoice()
    await runner.acoustic(voice, "hi", Controls(), deadline=50.5, need_by=51.5)
    await runner.decode(voice, np.zeros((80, 4), np.float32), stream_id="s", deadline=50.2)
    (_, ahead), (_, window) = handle.calls
    assert ahead["need_in"] == 1.5 and "need_in" not in window
