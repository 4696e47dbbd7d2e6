"""Every message the load generator sends is a valid client message of the protocol's JSON
Schema (strict: no field the schema does not name), recorded at a real server on loopback:
steady and open-loop streams (whole text and token by token, PCM and Opus, a voice), the
soak's cancel cycles and the danmaku pattern's lines."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from loadtest.cli import main
from loadtest.client import ClientConfig, run_open, run_steady
from loadtest.schedule import burst_arrivals
from loadtest.soak import one_cycle
from tests.conftest import ServerThread
from tests.protocol_schema import Recorder, record_messages

pytestmark = pytest.mark.slow


def kinds(recorder: Recorder) -> Counter[str]:
    recorder.check()
    return Counter(str(m.get("type")) for m in recorder.messages)


async def test_streams_send_schema_messages(
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = record_messages(monkeypatch)
    cfg = ClientConfig(url=server.ws_url, pace="done", voice="joe", codec="pcm_s16le",
                       sample_rate=24000)  # fmt: skip
    await run_steady(cfg, streams=1, duration_s=1.0, warmup=0, ramp_s=0.1)
    tokens = ClientConfig(url=server.ws_url, feed="tokens", tokens_per_s=200.0)
    await run_open(tokens, arrivals=burst_arrivals(burst_size=2, interval_s=10.0,
                                                   duration_s=1.0), max_connections=2, warmup=0)  # fmt: skip
    seen = kinds(sent)
    assert seen["start"] >= 3 and seen["text"] > seen["start"] and seen["end"] == seen["start"]


async def test_soak_cycles_send_schema_messages(
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent = record_messages(monkeypatch)
    assert await one_cycle(server.ws_url, cancel_after="started", timeout_s=30) == "ok"
    assert {"start", "text", "end", "cancel"} <= set(kinds(sent))


def test_danmaku_lines_are_schema_messages(
    server: ServerThread,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    sent = record_messages(monkeypatch)
    rc = main([
        "--url", server.ws_url, "--pattern", "danmaku", "--level", "4", "--duration", "1",
        "--burst-interval", "1", "--line-ttl-ms", "1500", "--drain-s", "10", "--no-metrics",
        "-o", str(tmp_path / "d.json"), "-q",
    ])  # fmt: skip
    assert rc == 0
    assert kinds(sent)["line"] >= 4
