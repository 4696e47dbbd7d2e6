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


def test_the_utterance_after_a_refused_one_reads_its_own_answers() -> None:
    cfg = ClientConfig(url="ws://127.0.0.1:1/v1/stream", pace="done")

    async def two() -> tuple[UtteranceRecord, UtteranceRecord]:
        ws = _RefusingServer([True, False])
        first = await run_utterance(ws, "Hello there.", stream=0, cfg=cfg)
        return first, await run_utterance(ws, "Hello again.", stream=0, cfg=cfg)

    first, second = asyncio.run(two())
    assert first.error == "busy"
    assert second.error is None and second.packets == 3
