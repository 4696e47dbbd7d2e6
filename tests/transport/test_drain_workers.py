"""SIGTERM on ``emostream serve --workers 2``: both worker processes drain (their in-flight
utterances finish with ``done``, then ``shutting_down`` and 1001) and the server exits 0."""

from __future__ import annotations

import asyncio
import re
import signal
import time
from pathlib import Path

import pytest

from tests.transport.served import Served
from tests.transport.test_drain import SHORT, speak

STREAMS = 6

pytestmark = pytest.mark.slow


async def test_sigterm_drains_both_workers(tmp_path: Path) -> None:
    env = {
        "EMOSTREAM_ACOUSTIC": "off",
        # 6 starts at once on a CI machine: CPU admission could refuse some (a burst's first
        # audio); these tests are about the drain.
        "EMOSTREAM_CPU_ADMISSION": "0",
        "EMOSTREAM_DATA_DIR": str(tmp_path / "data"),
        "EMOSTREAM_DRAIN_TIMEOUT_S": "8",
        "EMOSTREAM_LOG_LEVEL": "info",
    }
    srv = Served(tmp_path / "server.log", env, args=("--workers", "2")).start(timeout=180)
    try:
        # /healthz answers once one worker is up; a loaded machine can still be starting the
        # other, which then takes no stream and has nothing to drain (seen in CI runs).
        async with asyncio.timeout(120):
            while srv.log.read_text().count("emostream ready") < 2:
                await asyncio.sleep(0.1)
        events = [asyncio.Event() for _ in range(STREAMS)]
        done = [asyncio.Event() for _ in range(STREAMS)]
        text = " ".join([SHORT] * 5)  # long enough to be in flight at the signal
        tasks = [asyncio.create_task(speak(srv.ws_url, text, e, d)) for e, d in zip(events, done)]
        async with asyncio.timeout(90):
            await asyncio.gather(*(e.wait() for e in events))  # all are streaming audio
        # On a loaded machine the first streams can finish before the last one starts: those
        # are no longer in flight when the drain begins, and the workers do not count them.
        early = sum(d.is_set() for d in done)
        srv.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        t0 = time.monotonic()
        results = await asyncio.gather(*tasks)
        code = await asyncio.to_thread(srv.proc.wait, 60)  # type: ignore[union-attr]
        took = time.monotonic() - t0
    finally:
        srv.stop()
    for seen in results:
        assert seen == ["started", "audio", "done", "shutting_down", "close:1001"], seen
    log = srv.log.read_text()
    assert code == 0, log[-3000:]
    # Which streams were still in flight is the workers' to say: a "done" already sent can still
    # be on its way to the client when the signal lands (CI saw 5 drained with early == 0).
    in_flight = [int(n) for n in re.findall(r"draining: (\d+) utterance\(s\) in flight", log)]
    drained = re.findall(r"drained in [0-9.]+ s: (\d+) finished, (\d+) cut", log)
    assert len(in_flight) == len(drained) == 2, log[-3000:]  # one line each per worker
    finished = sum(int(f) for f, _ in drained)
    assert finished == sum(in_flight), (drained, in_flight)
    assert 0 < finished <= STREAMS - early, (drained, early)  # something was drained
    assert all(c == "0" for _, c in drained)
    assert "Traceback" not in log
    split = "/".join(f for f, _ in drained)
    print(f"--workers 2: {finished} streams drained ({split} per worker; {early} had ended "
          f"before the signal), exit 0 in {took:.1f} s")  # fmt: skip
