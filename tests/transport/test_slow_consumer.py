"""A client that stops reading: its stream is cut (``slow_reader``), its slot freed, and the
other clients keep being served (before issue 15 two such sockets starved a cap of 2)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import websockets

from emostream.voices.piper_voice import PiperVoice
from tests.conftest import ServerThread
from tests.transport.conftest import collect
from tests.transport.edge.test_limits import error_count

LONG_TEXT = " ".join(["This sentence goes on and on so that the audio keeps coming."] * 25)


@pytest.fixture(scope="module")
def two_streams(
    joe: PiperVoice, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerThread]:
    from emostream.config import Settings
    from emostream.transport.app import create_app
    from emostream.voices.catalog import VoiceCatalog

    settings = Settings(
        data_dir=str(tmp_path_factory.mktemp("slow")),
        max_streams=2,
        slow_reader_timeout_s=1.0,
        max_text_chars=5000,
    )
    with ServerThread(create_app(settings, catalog=VoiceCatalog([joe]))) as srv:
        yield srv


async def stalled_client(server: ServerThread) -> Any:
    """A connection whose reader stops: tiny kernel receive buffer, and the client library's
    own queue stops reading from the socket after one frame."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    sock.setblocking(False)
    ws = await websockets.connect(
        server.ws_url, sock=sock, compression=None, max_queue=1, max_size=None
    )
    start = {"type": "start", "format": {"codec": "pcm_s16le", "sample_rate": 48000}}
    await ws.send(json.dumps(start))
    await ws.send(json.dumps({"type": "text", "text": LONG_TEXT}))
    await ws.send(json.dumps({"type": "end"}))
    return ws


async def health(server: ServerThread) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=server.url) as client:
        body: dict[str, Any] = (await client.get("/healthz")).json()
        return body


async def test_readers_that_stop_are_cut_and_free_their_slots(two_streams: ServerThread) -> None:
    async with httpx.AsyncClient(base_url=two_streams.url) as client:
        before = error_count((await client.get("/metrics")).text, "slow_reader")
    t0 = time.monotonic()
    stalled = [await stalled_client(two_streams), await stalled_client(two_streams)]
    await asyncio.sleep(0.5)
    assert (await health(two_streams))["active_streams"] == 2  # both are being served
    # Cut within the timeout plus the time to fill the socket buffers.
    while (await health(two_streams))["active_streams"] > 0:
        assert time.monotonic() - t0 < 30, "stalled streams still hold their slots"
        await asyncio.sleep(0.1)
    freed_after = time.monotonic() - t0
    # A well-behaved client is served now, while the stalled sockets are still open.
    async with websockets.connect(two_streams.ws_url, compression=None, max_size=None) as ws:
        await ws.send(json.dumps({"type": "start"}))
        await ws.send(json.dumps({"type": "text", "text": "I am reading, thank you."}))
        await ws.send(json.dumps({"type": "end"}))
        events, packets = await collect(ws, timeout=30)
        assert events[0]["type"] == "started" and events[-1]["type"] == "done" and packets
    async with httpx.AsyncClient(base_url=two_streams.url) as client:
        after = error_count((await client.get("/metrics")).text, "slow_reader")
    assert after - before == 2
    for ws in stalled:
        ws.transport.abort()
    print(f"stalled streams freed after {freed_after:.1f} s")


async def test_a_reader_that_resumes_is_told_why(two_streams: ServerThread) -> None:
    ws = await stalled_client(two_streams)
    t0 = time.monotonic()
    while (await health(two_streams))["active_streams"] > 0:
        assert time.monotonic() - t0 < 30
        await asyncio.sleep(0.1)
    # Reading again: audio that was already buffered, then (if the client came back within
    # the server's last-words window) the error; either way the connection ends.
    codes: list[str] = []
    audio = 0
    try:
        async with asyncio.timeout(20):
            async for msg in ws:
                if isinstance(msg, bytes):
                    audio += len(msg)
                else:
                    event = json.loads(msg)
                    codes.append(event.get("code") or event["type"])
    except websockets.ConnectionClosed:
        pass
    assert codes[0] == "started" and audio > 0
    # Back within the server's one-second window: told why, then the utterance's one done.
    assert codes[-2:] == ["slow_reader", "done"], codes
    # Never the whole utterance: 25 long sentences are about 90 s (8.6 MB of 48 kHz PCM).
    print(f"buffered audio the client read after the cut: {audio} bytes; events {codes}")
    assert audio < 4_000_000, audio
