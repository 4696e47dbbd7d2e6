from __future__ import annotations

import asyncio
import json
import time

from loadtest.client import ClientConfig, _pace, run_utterance
from loadtest.report import UtteranceRecord


def _waited(rec: UtteranceRecord, cfg: ClientConfig) -> float:
    t0 = time.perf_counter()
    asyncio.run(_pace(rec, cfg, deadline=t0 + 10.0))
    return time.perf_counter() - t0


def test_a_refused_utterance_waits_the_error_backoff() -> None:
    busy = UtteranceRecord(stream=0, error="busy")
    assert _waited(busy, ClientConfig(url="ws://127.0.0.1:1/v1/stream")) < 0.05  # default: at once
    backoff = ClientConfig(url="ws://127.0.0.1:1/v1/stream", error_backoff_ms=150.0)
    assert _waited(busy, backoff) >= 0.14
    assert _waited(UtteranceRecord(stream=0), backoff) < 0.05  # no error: no backoff


class _RefusingServer:
    """A connection whose server refuses the first start (busy) and answers the text and
    end sent after it with not_started, as the transport does; then speaks normally."""

    def __init__(self, refuse: list[bool]) -> None:
        self.refuse = refuse
        self.queue: asyncio.Queue[str | bytes] = asyncio.Queue()
        self.open = False

    async def send(self, raw: str) -> None:
        kind = json.loads(raw)["type"]
        if kind == "start":
            self.open = not self.refuse.pop(0)
            answer = {"type": "started", "frame_ms": 20} if self.open else {
                "type": "error", "code": "busy"}  # fmt: skip
            self.queue.put_nowait(json.dumps(answer))
        elif not self.open:
            self.queue.put_nowait(json.dumps({"type": "error", "code": "not_started"}))
        elif kind == "end":
            for _ in range(3):
                self.queue.put_nowait(b"\x00" * 40)
            self.queue.put_nowait(json.dumps({"type": "done"}))
            self.open = False

    async def recv(self) -> str | bytes:
        await asyncio.sleep(0.005)  # the network: the client's sender runs meanwhile
        return await self.queue.get()


def test_a_refusal_asking_to_retry_later_is_waited_for() -> None:
    busy = UtteranceRecord(stream=0, error="busy", refused_ms=1.0, retry_after_ms=150.0)
    assert _waited(busy, ClientConfig(url="ws://127.0.0.1:1/v1/stream")) >= 0.14
    ignoring = ClientConfig(url="ws://127.0.0.1:1/v1/stream", retry_after=False)
    assert _waited(busy, ignoring) < 0.05


class _QuietServer(_RefusingServer):
    """A server of 2026-12-07: busy says retry_after_ms, and the refused start's text and
    end get no answer."""

    async def send(self, raw: str) -> None:
        kind = json.loads(raw)["type"]
        if kind == "start" and self.refuse[0]:
            self.refuse.pop(0)
            self.queue.put_nowait(json.dumps({"type": "error", "code": "busy",
                                              "retry_after_ms": 250}))  # fmt: skip
        elif kind == "start" or self.open:
            await super().send(raw)


def test_a_refusal_from_a_quiet_server_is_recorded_at_once() -> None:
    cfg = ClientConfig(url="ws://127.0.0.1:1/v1/stream", pace="done")

    async def two() -> tuple[UtteranceRecord, float, UtteranceRecord]:
        ws = _QuietServer([True, False])
        t0 = time.perf_counter()
        first = await run_utterance(ws, "Hello there.", stream=0, cfg=cfg)
        took = time.perf_counter() - t0
        return first, took, await run_utterance(ws, "Hello again.", stream=0, cfg=cfg)

    first, took, second = asyncio.run(two())
    assert first.error == "busy" and not first.started and took < 0.5  # waits for no answer
    assert first.retry_after_ms == 250.0 and first.refused_ms is not None
    assert 0.0 < first.refused_ms < 500.0
    assert second.error is None and second.started and second.packets == 3


def test_the_utterance_after_a_refused_one_reads_its_own_answers() -> None:
    cfg = ClientConfig(url="ws://127.0.0.1:1/v1/stream", pace="done")

    async def two() -> tuple[UtteranceRecord, UtteranceRecord]:
        ws = _RefusingServer([True, False])
        first = await run_utterance(ws, "Hello there.", stream=0, cfg=cfg)
        return first, await run_utterance(ws, "Hello again.", stream=0, cfg=cfg)

    first, second = asyncio.run(two())
    assert first.error == "busy"
    assert second.error is None and second.packets == 3
