"""``emostream danmaku`` against a real server on loopback (voice joe): stdin and a unix
socket as input, audio written, every line accounted for, malformed lines skipped, and a
reconnect that loses no waiting line."""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import soundfile as sf

from emostream.bridge.danmaku import BridgeOptions, DanmakuBridge
from emostream.bridge.lines import Backoff, LineParser, Outbox
from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread, free_port

PCM24 = {"voice": "joe", "format": {"codec": "pcm_s16le", "sample_rate": 24000}}


def make_app(joe: PiperVoice, data_dir: str, **settings: Any) -> object:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    return create_app(Settings(data_dir=data_dir, **settings), catalog=VoiceCatalog([joe]))


@pytest.fixture(scope="module")
def small_queue(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    app = make_app(joe, str(tmp_path_factory.mktemp("danmaku")), line_queue_max=3)
    with ServerThread(app) as srv:
        yield srv


class Recorder:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        json.dumps(event)  # every event is one JSON line
        self.events.append(event)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["type"] == kind]


def bridge(url: str, rec: Recorder, audio: io.BytesIO | None, **opts: Any) -> DanmakuBridge:
    fmt = opts.pop("output_format", "pcm")
    fields = opts.pop("fields", PCM24)
    return DanmakuBridge(
        BridgeOptions(url=url, fields=fields, output_format=fmt, **opts),
        LineParser(ttl_ms=opts.pop("ttl_ms", 30000.0)),
        Outbox(fields=fields),
        emit=rec, audio=audio,
        backoff=Backoff(initial_s=0.1, max_s=0.5),
    )  # fmt: skip


def stdin_of(*lines: str) -> io.BytesIO:
    return io.BytesIO("".join(line + "\n" for line in lines).encode())


def test_stdin_lines_are_spoken_in_priority_order_and_the_bridge_exits_at_eof(
    small_queue: ServerThread,
) -> None:
    rec, audio = Recorder(), io.BytesIO()
    b = bridge(small_queue.ws_url, rec, audio, output_format="wav")
    lines = stdin_of(
        json.dumps({"text": "Hello chat.", "id": "m1"}),
        "{broken json",
        "thanks for the follow!",
        json.dumps({"text": "", "id": "empty"}),
        json.dumps({"text": "A gift, thank you!", "id": "gift", "priority": 5, "user": "ann"}),
    )
    t0 = time.monotonic()
    rc = asyncio.run(b.run(stdin=lines))
    assert rc == 0 and time.monotonic() - t0 < 60
    errors = rec.of("input_error")
    assert [e["line"] for e in errors] == [2, 4]
    assert "not valid JSON" in errors[0]["message"] and "'text'" in errors[1]["message"]
    started = [e["id"] for e in rec.of("started")]
    assert sorted(started) == ["b1", "gift", "m1"]
    assert [e["id"] for e in rec.of("done")] == started
    assert rec.of("queue") and not rec.of("line_dropped")
    (summary,) = [e for e in rec.events if e.get("event") == "exit"]
    assert summary["received"] == 3 == summary["spoken"] and summary["input_errors"] == 2
    assert summary["left"] == 0 and summary["connections"] == 1
    pcm, rate = sf.read(io.BytesIO(audio.getvalue()), dtype="int16")
    assert rate == 24000
    said = sum(e["audio_ms"] for e in rec.of("done"))
    assert abs(len(pcm) / 24.0 - said) <= 3 * 20.0  # every line's audio, in one WAV
    assert b.outbox.tally.settled == b.outbox.tally.received


def test_overflow_and_expiry_are_reported_and_every_line_accounted(
    small_queue: ServerThread,
) -> None:
    rec = Recorder()
    b = bridge(small_queue.ws_url, rec, None)
    lines = [json.dumps({"text": f"Line number {i} of the burst.", "id": f"l{i}",
                         "ttl_ms": 1500}) for i in range(10)]  # fmt: skip
    assert asyncio.run(b.run(stdin=stdin_of(*lines))) == 0
    drops = rec.of("line_dropped")
    assert drops and all(d["reason"] in ("overflow", "expired") for d in drops)
    assert {d["reason"] for d in drops} >= {"overflow"}
    t = b.outbox.tally
    assert t.received == 10 == t.spoken + sum(t.dropped.values())
    assert t.spoken == len(rec.of("done")) and t.unconfirmed == 0
    depths = [e["depth"] for e in rec.of("queue")]
    assert max(depths) <= 3


def test_no_drain_exits_without_waiting(small_queue: ServerThread) -> None:
    rec = Recorder()
    b = bridge(small_queue.ws_url, rec, None, drain=False)
    lines = [f"A fairly long line number {i}, spoken slowly by the server." for i in range(5)]
    t0 = time.monotonic()
    assert asyncio.run(b.run(stdin=stdin_of(*lines))) == 0
    assert time.monotonic() - t0 < 5
    (summary,) = [e for e in rec.events if e.get("event") == "exit"]
    assert summary["received"] == 5 and summary["left"] > 0


def test_paced_lines_go_one_at_a_time_and_expire_in_the_bridge(
    small_queue: ServerThread,
) -> None:
    """With a lead the server's queue never holds more than one line, and lines that could
    not be heard within their TTL are dropped by the bridge instead of spoken late."""
    rec = Recorder()
    b = bridge(small_queue.ws_url, rec, None, pace_lead_s=0.3)
    lines = [json.dumps({"text": f"Paced line number {i}, a sentence of some length.",
                         "id": f"p{i}", "ttl_ms": 2500}) for i in range(8)]  # fmt: skip
    assert asyncio.run(b.run(stdin=stdin_of(*lines))) == 0
    assert max(e["depth"] for e in rec.of("queue")) <= 1
    t = b.outbox.tally
    assert t.received == 8 == t.spoken + t.dropped["expired"] and t.spoken >= 1
    bridge_drops = [e for e in rec.of("line_dropped") if e.get("where") == "bridge"]
    assert len(bridge_drops) == t.dropped["expired"] >= 1
    assert all(e["waited_ms"] >= 2500 for e in bridge_drops)


@pytest.mark.parametrize("kind", ["unix", "tcp"])
def test_local_socket_input(small_queue: ServerThread, kind: str) -> None:
    path = os.path.join(tempfile.mkdtemp(prefix="dm"), "chat.sock")
    port = free_port()
    listen = f"unix:{path}" if kind == "unix" else f"tcp:127.0.0.1:{port}"
    rec, audio = Recorder(), io.BytesIO()
    b = bridge(small_queue.ws_url, rec, audio, listen=listen)

    async def open_input() -> asyncio.StreamWriter:
        if kind == "unix":
            return (await asyncio.open_unix_connection(path))[1]
        return (await asyncio.open_connection("127.0.0.1", port))[1]

    async def go() -> int:
        task = asyncio.create_task(b.run())
        async with asyncio.timeout(30):
            while not [e for e in rec.events if e.get("event") == "listening"]:
                await asyncio.sleep(0.05)
            for who in ("ann", "bo"):
                w = await open_input()
                w.write(json.dumps({"text": f"Hi from {who}.", "id": who}).encode() + b"\n")
                w.write(b"not json but fine\n{bad\n")
                await w.drain()
                w.close()
            while b.outbox.tally.spoken < 4:
                await asyncio.sleep(0.05)
        b.end_of_input()
        return await task

    assert asyncio.run(go()) == 0
    assert sorted(e["id"] for e in rec.of("done")) == ["ann", "b1", "b2", "bo"]
    assert len(rec.of("input_error")) == 2 and not os.path.exists(path)
    assert len(audio.getvalue()) > 24000  # raw PCM of four lines


def test_waiting_lines_survive_a_server_restart(joe: PiperVoice, tmp_path: Path) -> None:
    """The bridge starts before the server (held lines, retried with backoff), then the
    server goes away mid-queue and comes back on the same port: every line is spoken,
    interrupted (cut while speaking) or dropped, none lost."""
    port = free_port()
    url = f"ws://127.0.0.1:{port}/v1/stream"
    rec = Recorder()
    b = bridge(url, rec, None)
    lines = [json.dumps({"text": f"Line {i}: a sentence of some length to keep it busy.",
                         "id": f"l{i}"}) for i in range(8)]  # fmt: skip
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(asyncio.run(b.run(stdin_of(*lines)))))
    thread.start()
    time.sleep(1.0)  # no server yet: lines are held, connects fail
    assert b.connections == 0 and len(b.outbox) == 8
    with ServerThread(make_app(joe, str(tmp_path / "a"), line_queue_max=32), port=port):
        deadline = time.monotonic() + 30
        while b.outbox.tally.spoken < 2:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    # the first server is gone; lines it had queued are held again
    with ServerThread(make_app(joe, str(tmp_path / "b"), line_queue_max=32), port=port):
        thread.join(timeout=60)
    assert result == [0]
    t = b.outbox.tally
    assert t.received == 8 == t.settled and t.unconfirmed == 0, t.as_dict()
    assert t.spoken >= 6 and b.connections >= 2
    cut = [e for e in rec.events if "closed by the server" in e.get("reason", "")]
    assert cut and cut[0]["holding"] > 0  # lines were waiting when the server went


def test_cli_pipes_stdin_to_a_wav_file_and_logs_events(
    small_queue: ServerThread, tmp_path: Path
) -> None:
    out = tmp_path / "chat.wav"
    lines = 'hello from the pipe\n{"text": "second line", "priority": 2}\n[oops\n{\n'
    proc = subprocess.run(
        [sys.executable, "-m", "emostream", "danmaku", "--url", small_queue.ws_url,
         "--voice", "joe", "-o", str(out)],
        input=lines.encode(), capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    events = [json.loads(x) for x in proc.stderr.decode().splitlines() if x.startswith("{")]
    kinds = [e["type"] for e in events]
    assert kinds.count("started") == 3 == kinds.count("done")
    assert kinds.count("input_error") == 1  # "{": not JSON; "[oops" is plain text
    assert events[-1]["event"] == "exit" and events[-1]["spoken"] == 3
    pcm, rate = sf.read(out, dtype="int16")
    assert rate == 24000 and len(pcm) > 24000


def test_api_key_is_sent_and_a_refused_key_ends_the_bridge(joe: PiperVoice, tmp_path: Path) -> None:
    app = make_app(joe, str(tmp_path), api_keys="sekrit-key-for-tests")
    with ServerThread(app) as srv:
        rec = Recorder()
        b = bridge(srv.ws_url, rec, None, api_key="sekrit-key-for-tests")
        assert asyncio.run(b.run(stdin=stdin_of("Hello with a key."))) == 0
        assert b.outbox.tally.spoken == 1
        rec = Recorder()
        b = bridge(srv.ws_url, rec, None, api_key="wrong")
        t0 = time.monotonic()
        assert asyncio.run(b.run(stdin=stdin_of("Hello without."))) == 2
        assert time.monotonic() - t0 < 10  # no endless retries
        (summary,) = [e for e in rec.events if e.get("event") == "exit"]
        assert "refused the connection" in summary["error"] and summary["left"] == 1
