"""Shared fixtures: the embedded voice (loaded once) and a real server on loopback."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any, Self

import pytest

from emostream.voices.piper_voice import PiperVoice


@pytest.fixture(scope="session")
def joe() -> PiperVoice:
    return PiperVoice.load_default(threads=1)


def clip_wav(voice: PiperVoice, text: str) -> bytes:
    """A reference clip (16 kHz WAV bytes) spoken by ``voice``."""
    import asyncio
    import io

    import soundfile as sf

    from emostream.stream.oneshot import synthesize

    pcm = asyncio.run(synthesize(voice, text, sample_rate=16000))
    buf = io.BytesIO()
    sf.write(buf, pcm, 16000, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Loopback:
    """URLs of a server on ``self.port`` of the loopback interface."""

    port: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/stream"


class ServerThread(Loopback):
    """uvicorn serving an app in a thread, with the same options the CLI uses."""

    def __init__(
        self, app: object, port: int | None = None, *, ws: type[Any] | str = "websockets-sansio"
    ) -> None:
        import uvicorn

        self.port = port or free_port()
        config = uvicorn.Config(
            app, host="127.0.0.1", port=self.port, loop="asyncio", http="httptools",
            ws=ws, ws_per_message_deflate=False, log_level="warning",
            lifespan="on",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="session")
def server(joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    data_dir = str(tmp_path_factory.mktemp("emostream-data"))
    settings = Settings(max_text_chars=2000, max_streams=8, data_dir=data_dir)
    app = create_app(settings, catalog=VoiceCatalog([joe]))
    with ServerThread(app) as srv:
        yield srv
