"""The Redis registry fails closed: every call raises ``StoreUnavailable`` (never a redis-py
error) while Redis cannot be reached, at once inside the window after a failure, and works
again once Redis is back, without being reopened."""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from emostream.voices.cloning.registries import open_registry
from emostream.voices.cloning.registry import StoreUnavailable, VoiceStore
from emostream.voices.cloning.registry_redis import RedisVoiceRegistry, redacted
from tests.voices.voice_fixtures import RedisServer, _free_port


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _add(reg: VoiceStore, name: str = "A") -> str:
    emb = np.ones(256, dtype=np.float32)
    return reg.add(name=name, embedding=emb, encoder="ge2e-1", clip_sha256="a" * 64,
                   duration_s=5.0, speech_s=4.5).id  # fmt: skip


CALLS: dict[str, Callable[[VoiceStore], object]] = {
    "get": lambda reg: reg.get("clone_0000000000000000"),
    "voices": lambda reg: reg.voices(),
    "clip": lambda reg: reg.clip("clone_0000000000000000"),
    "delete": lambda reg: reg.delete("clone_0000000000000000"),
    "len": len,
    "add": _add,
    "check": lambda reg: reg.check(),
}


@pytest.fixture
def blackhole() -> Iterator[str]:
    """A port that accepts TCP connections (kernel backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(64)
        yield f"redis://127.0.0.1:{s.getsockname()[1]}/0"


def test_redis_absent_at_open_is_one_clear_error_naming_the_url(tmp_path: Path) -> None:
    port = _free_port()
    with pytest.raises(StoreUnavailable) as info:
        open_registry(f"redis://:hunter2@127.0.0.1:{port}/0", tmp_path)
    message = str(info.value)
    assert message.startswith(f"voice registry redis://:***@127.0.0.1:{port}/0 unreachable (")
    assert "unreachable" in message and "hunter2" not in message
    assert info.value.retry_after_s == 5.0


def test_a_silent_redis_at_open_costs_one_timeout(blackhole: str, tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(StoreUnavailable):
        open_registry(blackhole, tmp_path, timeout_s=0.3)
    assert time.monotonic() - t0 < 1.5


def test_redis_down_fails_closed_then_reconnects(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    reg = RedisVoiceRegistry(redis_server.url, retry_after_s=5.0, clock=clock)
    vid = _add(reg, "Kept")
    redis_server.stop()
    caplog.clear()  # (the fixture's Redis has no persistence: a warning at open)
    caplog.set_level(logging.DEBUG, logger="emostream.voices.cloning.registry_redis")
    with pytest.raises(StoreUnavailable) as first:
        reg.get(vid)
    assert first.value.retry_after_s == 5.0
    clock.now += 2.0
    for name, call in CALLS.items():  # inside the window: refused at once, whatever the call
        with pytest.raises(StoreUnavailable) as info:
            call(reg)
        assert info.value.retry_after_s == pytest.approx(3.0), name
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0].getMessage()
    assert all(r.exc_info is None for r in caplog.records)
    clock.now += 3.0  # the window is over: Redis is tried (still down), a new window opens
    with pytest.raises(StoreUnavailable):
        reg.voices()
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1  # one outage
    redis_server.start()  # empty now (no persistence): what matters is that calls work
    with pytest.raises(StoreUnavailable):
        reg.check()  # still inside the new window: not tried yet
    clock.now += 5.0
    reg.check()
    assert reg.get(vid) is None and len(reg) == 0
    again = _add(reg, "After")
    assert [v.id for v in reg.voices()] == [again]
    assert any("reachable again" in r.getMessage() for r in caplog.records)
    reg.close()


def test_a_hung_redis_costs_one_timeout_per_window(redis_server: RedisServer) -> None:
    """SIGSTOP: Redis holds its sockets and answers nothing (a hung or overloaded server)."""
    assert redis_server.proc is not None
    clock = Clock()
    reg = RedisVoiceRegistry(redis_server.url, timeout_s=0.3, retry_after_s=5.0, clock=clock)
    vid = _add(reg)
    redis_server.proc.send_signal(signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        with pytest.raises(StoreUnavailable):
            reg.voices()
        assert 0.25 < time.monotonic() - t0 < 1.5
        t0 = time.monotonic()
        for _ in range(20):
            with pytest.raises(StoreUnavailable):
                reg.get(vid)
        assert time.monotonic() - t0 < 0.1  # no network inside the window
    finally:
        redis_server.proc.send_signal(signal.SIGCONT)
    clock.now += 5.0
    got = reg.get(vid)  # the same registry, a fresh connection
    assert got is not None and got.name == "A"
    reg.close()


def test_sqlite_check_is_a_no_op(tmp_path: Path) -> None:
    reg = open_registry("", tmp_path)
    reg.check()
    reg.close()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        ("redis://u:p@h:1/0", "redis://u:***@h:1/0"),
        ("rediss://:p@h/2", "rediss://:***@h/2"),
        ("unix:///run/r.sock?db=1&password=p", "unix:///run/r.sock?db=1&password=***"),
    ],
)
def test_redacted(url: str, shown: str) -> None:
    assert redacted(url) == shown
