"""Idle flood: 500 WebSocket connections that never send a message, against a real
``emostream serve`` with a 2 s idle timeout: every one gets ``idle_timeout`` and close 1000
within a bounded time, and the server's open fds go back to where they were."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest
import websockets

from loadtest.procstats import sample
from tests.transport.served import Served

SOCKETS = int(os.environ.get("EMOSTREAM_IDLE_FLOOD", "500"))
IDLE_S = 2.0

pytestmark = pytest.mark.slow


async def idle_client(url: str) -> tuple[str, int | None, float, float]:
    """Connect, say nothing; what the server said, its close code, and when it closed: seconds
    after the connect began (an upper bound on the server's idle time: it accepted later) and
    after the handshake was seen here (a lower bound: with hundreds of sockets on one event
    loop the client sees its handshake late, which made a correct server look early)."""
    started = time.monotonic()
    async with websockets.connect(url, open_timeout=60) as ws:
        opened = time.monotonic()
        said = ""
        try:
            async with asyncio.timeout(IDLE_S + 30):
                async for msg in ws:
                    said = json.loads(msg).get("code", "") if isinstance(msg, str) else "audio"
        except websockets.ConnectionClosed:
            pass
        closed = time.monotonic()
        return said, ws.close_code, closed - started, closed - opened


async def test_idle_sockets_are_closed_after_the_idle_timeout(tmp_path: Path) -> None:
    env = {
        "EMOSTREAM_ACOUSTIC": "off",
        "EMOSTREAM_DATA_DIR": str(tmp_path / "data"),
        "EMOSTREAM_WS_IDLE_TIMEOUT_S": str(IDLE_S),
        "EMOSTREAM_LOG_LEVEL": "warning",
    }
    with Served(tmp_path / "server.log", env) as srv:
        await asyncio.sleep(0.5)
        before = sample(srv.pid)
        t0 = time.monotonic()
        results = await asyncio.gather(*(idle_client(srv.ws_url) for _ in range(SOCKETS)))
        took = time.monotonic() - t0
        await asyncio.sleep(0.5)
        after = sample(srv.pid)
    codes = {(said, code) for said, code, _, _ in results}
    assert codes == {("idle_timeout", 1000)}, codes
    at_most = sorted(t for _, _, t, _ in results)  # from the connect: >= the server's hold
    at_least = sorted(t for _, _, _, t in results)  # from the handshake seen: <= it
    assert at_most[0] >= IDLE_S * 0.9 and at_least[-1] < IDLE_S + 5, (at_most[0], at_least[-1])
    held = at_least
    assert after.fds <= before.fds, (before, after)
    print(
        f"{SOCKETS} idle sockets: all closed (idle_timeout, 1000) {held[0]:.1f}-{held[-1]:.1f} s "
        f"after opening, {took:.1f} s in all; server fds {before.fds} -> {after.fds}, "
        f"RSS {before.rss_bytes / 2**20:.0f} -> {after.rss_bytes / 2**20:.0f} MB"
    )
